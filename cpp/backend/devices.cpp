// The device names a Context accepts and the backend each one makes (backend.hpp's make_backend).
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include "backend/backend.hpp"

namespace ember {

namespace {

std::mutex g_mu;
std::map<std::string, BackendFactory>& factories() {
    static std::map<std::string, BackendFactory> f;
    return f;
}

const char* kChoices = "cpu, cpu-guarded, cuda";

void check_name(const std::string& device, const char* where) {
    if (device != "cpu" && device != "cpu-guarded" && device != "cuda")
        throw std::invalid_argument(std::string(where) + ": unknown device '" + device + "' (choices: " + kChoices + ")");
}

}  // namespace

void register_backend_factory(const std::string& device, BackendFactory make) {
    check_name(device, "register_backend_factory");
    std::lock_guard<std::mutex> l(g_mu);
    factories()[device] = make;
}

std::string default_device() {
    const char* v = std::getenv("EMBER_DEVICE");
    if (!v || !*v) return "cpu";
    const std::string d(v);
    check_name(d, "EMBER_DEVICE");
    return d;
}

std::shared_ptr<Backend> make_backend(const std::string& device_in, int threads) {
    const std::string device = device_in.empty() ? default_device() : device_in;
    check_name(device, "device");
    if (device == "cpu") return make_cpu_backend(threads);
    if (device == "cpu-guarded") return make_guarded_backend(make_cpu_backend(threads));
    BackendFactory make = nullptr;
    {
        std::lock_guard<std::mutex> l(g_mu);
        auto it = factories().find(device);
        if (it != factories().end()) make = it->second;
    }
    if (!make)
        throw std::runtime_error("device '" + device + "': this build of Ember has no CUDA backend (it is built only where "
                                 "CMake finds nvcc and EMBER_CUDA is not OFF, and only programs linking ember_cuda have it; "
                                 "the Python wheel is CPU-only)");
    return make(threads);
}

}  // namespace ember
