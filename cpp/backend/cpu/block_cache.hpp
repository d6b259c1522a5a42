// A bounded cache of freed memory blocks for the CPU backend.
//
// Fresh pages cost a fault and the kernel's zeroing each (in a VM about 1 s per GiB, measured: a third of
// keygen's and bootstrapping's CPU time without a cache), and the evaluator allocates temporaries of a few
// sizes over and over. Blocks of 2 MiB and more ("huge" blocks) are mapped directly, 2 MiB-aligned with
// transparent huge pages advised, and their sizes rounded to whole 2 MiB pages. Through malloc they would
// raise glibc's dynamic mmap threshold after the first free and then come from the heap, which keeps freed
// memory resident (1.4 GiB more after a bootstrapping at N = 2^16).
//
// A huge request is served by any cached huge block, not only one of the same size: the smallest cached
// block at least as large is used whole if it is at most 4 times the request (its pages stay mapped, so
// nothing faults when it serves a larger request again; cutting at 1.5 times still left ~320 faults of
// 2 MiB per bootstrapping at N = 2^16, 4 times none, for 50 MiB more peak memory), cut to size if larger
// (its tail unmapped); else the largest smaller one is grown in place of a fresh mapping (mremap keeps its
// pages; only the growth faults). Ciphertexts change size at every
// level, so exact-size reuse alone missed most of the time once the cache was bounded. Smaller blocks come
// from aligned_alloc and are reused by exact size class.
//
// The cache holds at most `capacity` bytes; the process's memory counts them.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ember {

class BlockCache {
public:
    static constexpr std::size_t kHuge = std::size_t(2) << 20;

    explicit BlockCache(std::size_t capacity) : capacity_(capacity) {}
    ~BlockCache();
    BlockCache(const BlockCache&) = delete;
    BlockCache& operator=(const BlockCache&) = delete;

    // The bytes actually reserved for a request of `bytes`: whole 2 MiB pages for huge blocks, 64-byte lines below.
    static std::size_t size_class(std::size_t bytes);

    // A 64-byte aligned block of at least `bytes` (contents unspecified); nullptr if the system has no memory.
    void* get(std::size_t bytes);
    // Gives back a block from get(bytes): cached while the cache has room, returned to the system otherwise.
    void put(void* p, std::size_t bytes);

    struct Stats {
        std::size_t exact = 0, whole = 0, cut = 0, grown = 0, fresh = 0;  // how get() was served
        std::size_t freed = 0;                                  // blocks returned to the system by put()
    };
    Stats stats() const;
    std::size_t cached_bytes() const;
    std::size_t capacity() const { return capacity_; }

private:
    std::pair<void*, std::size_t> take_huge_locked(std::size_t cls);
    static void* map_huge(std::size_t bytes);
    static void free_block(void* p, std::size_t cls);

    const std::size_t capacity_;
    mutable std::mutex mu_;
    std::map<std::size_t, std::vector<void*>> huge_;             // by size, so a best fit is a lower_bound
    std::unordered_map<std::size_t, std::vector<void*>> small_;  // by exact size class
    std::unordered_map<void*, std::size_t> handed_;              // huge blocks in use: their mapped size
    std::size_t cached_ = 0;
    Stats stats_;
};

}  // namespace ember
