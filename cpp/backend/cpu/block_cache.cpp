#include "backend/cpu/block_cache.hpp"

#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <tuple>
#include <utility>

#include <sys/mman.h>

namespace ember {

std::size_t BlockCache::size_class(std::size_t bytes) {
    return bytes >= kHuge ? (bytes + kHuge - 1) / kHuge * kHuge : (bytes + 63) / 64 * 64;
}

BlockCache::~BlockCache() {
    for (auto& [cls, blocks] : huge_)
        for (void* p : blocks) free_block(p, cls);
    for (auto& [cls, blocks] : small_)
        for (void* p : blocks) free_block(p, cls);
}

void* BlockCache::map_huge(std::size_t bytes) {
    const std::size_t len = bytes + kHuge;
    void* raw = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    const auto start = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t aligned = (start + kHuge - 1) & ~(std::uintptr_t(kHuge) - 1);
    const std::size_t head = aligned - start, tail = len - head - bytes;
    if (head) munmap(raw, head);
    if (tail) munmap(reinterpret_cast<void*>(aligned + bytes), tail);
#if defined(MADV_HUGEPAGE)  // Linux (transparent huge pages); not on macOS
    madvise(reinterpret_cast<void*>(aligned), bytes, MADV_HUGEPAGE);
#endif
    return reinterpret_cast<void*>(aligned);
}

void BlockCache::free_block(void* p, std::size_t cls) {
    if (cls >= kHuge) munmap(p, cls);
    else std::free(p);
}

// Pops the best cached huge block for a request of cls bytes: the smallest at least as large, else the
// largest smaller one. {nullptr, 0} when none is cached.
std::pair<void*, std::size_t> BlockCache::take_huge_locked(std::size_t cls) {
    auto it = huge_.lower_bound(cls);
    if (it == huge_.end()) {
        if (huge_.empty()) return {nullptr, 0};
        it = std::prev(huge_.end());
    }
    const std::size_t have = it->first;
    void* p = it->second.back();
    it->second.pop_back();
    cached_ -= have;
    if (it->second.empty()) huge_.erase(it);
    return {p, have};
}

void* BlockCache::get(std::size_t bytes) {
    const std::size_t cls = size_class(bytes);
    if (cls < kHuge) {
        {
            std::lock_guard<std::mutex> l(mu_);
            auto it = small_.find(cls);
            if (it != small_.end() && !it->second.empty()) {
                void* p = it->second.back();
                it->second.pop_back();
                cached_ -= cls;
                ++stats_.exact;
                return p;
            }
            ++stats_.fresh;
        }
        return std::aligned_alloc(64, cls);
    }
    void* p = nullptr;
    std::size_t have = 0, keep = cls;
    {
        std::lock_guard<std::mutex> l(mu_);
        std::tie(p, have) = take_huge_locked(cls);
        if (p && have >= cls && have <= cls * 4) {  // used whole: its pages stay, no fault later
            keep = have;
            ++(have == cls ? stats_.exact : stats_.whole);
            handed_[p] = keep;
            return p;
        }
    }
    if (p && have > cls) {  // more than 4 times larger: cut to size, the tail's pages go back to the system
        munmap(static_cast<char*>(p) + cls, have - cls);
        std::lock_guard<std::mutex> l(mu_);
        ++stats_.cut;
        handed_[p] = cls;
        return p;
    }
    if (p) {  // grow a smaller block into a fresh aligned range: its pages move, only the growth faults
#if defined(__linux__)  // mremap is Linux's; elsewhere the smaller block is unmapped and a fresh one mapped
        void* dst = map_huge(cls);
        if (dst) {
            void* moved = mremap(p, have, cls, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
            if (moved != MAP_FAILED) {
#if defined(MADV_HUGEPAGE)
                madvise(moved, cls, MADV_HUGEPAGE);
#endif
                std::lock_guard<std::mutex> l(mu_);
                ++stats_.grown;
                handed_[moved] = cls;
                return moved;
            }
            munmap(dst, cls);
        }
#endif
        free_block(p, have);
    }
    p = map_huge(cls);
    std::lock_guard<std::mutex> l(mu_);
    ++stats_.fresh;
    if (p) handed_[p] = cls;
    return p;
}

void BlockCache::put(void* p, std::size_t bytes) {
    if (!p) return;
    std::size_t cls = size_class(bytes);
    std::vector<std::pair<void*, std::size_t>> evicted;
    {
        std::lock_guard<std::mutex> l(mu_);
        if (cls >= kHuge) {  // the block's real size: it may have been a larger cached block used whole
            auto h = handed_.find(p);
            if (h != handed_.end()) {
                cls = h->second;
                handed_.erase(h);
            }
        }
        if (cls <= capacity_) {
            // Room is made by dropping the small blocks first, then huge ones smaller than this one: a large
            // block can serve any smaller request, a small one only its own size.
            for (auto it = small_.begin(); cached_ + cls > capacity_ && it != small_.end(); ++it)
                while (!it->second.empty() && cached_ + cls > capacity_) {
                    evicted.emplace_back(it->second.back(), it->first);
                    it->second.pop_back();
                    cached_ -= it->first;
                }
            while (cached_ + cls > capacity_ && !huge_.empty() && huge_.begin()->first < cls) {
                auto it = huge_.begin();
                evicted.emplace_back(it->second.back(), it->first);
                it->second.pop_back();
                cached_ -= it->first;
                if (it->second.empty()) huge_.erase(it);
            }
            if (cached_ + cls <= capacity_) {
                (cls >= kHuge ? huge_[cls] : small_[cls]).push_back(p);
                cached_ += cls;
                p = nullptr;
            }
        }
        stats_.freed += evicted.size() + (p ? 1 : 0);
    }
    for (const auto& [e, c] : evicted) free_block(e, c);
    if (p) free_block(p, cls);
}

BlockCache::Stats BlockCache::stats() const {
    std::lock_guard<std::mutex> l(mu_);
    return stats_;
}

std::size_t BlockCache::cached_bytes() const {
    std::lock_guard<std::mutex> l(mu_);
    return cached_;
}

}  // namespace ember
