// The CPU backend's cache of freed blocks: sizes served, contents kept when a block grows, the bound held.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "backend/cpu/block_cache.hpp"

using ember::BlockCache;

namespace {
constexpr std::size_t MiB = std::size_t(1) << 20;

void fill(void* p, std::size_t bytes, std::uint8_t v) { std::memset(p, v, bytes); }
bool all_are(const void* p, std::size_t bytes, std::uint8_t v) {
    const auto* b = static_cast<const std::uint8_t*>(p);
    for (std::size_t i = 0; i < bytes; ++i)
        if (b[i] != v) return false;
    return true;
}
}  // namespace

TEST(BlockCache, SizeClasses) {
    EXPECT_EQ(BlockCache::size_class(1), 64u);
    EXPECT_EQ(BlockCache::size_class(64), 64u);
    EXPECT_EQ(BlockCache::size_class(65), 128u);
    EXPECT_EQ(BlockCache::size_class(2 * MiB), 2 * MiB);
    EXPECT_EQ(BlockCache::size_class(2 * MiB + 1), 4 * MiB);
}

TEST(BlockCache, ExactReuseAndAlignment) {
    BlockCache c(64 * MiB);
    void* a = c.get(5 * MiB);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a) % (2 * MiB), 0u);  // huge blocks on huge-page boundaries
    fill(a, 5 * MiB, 7);
    c.put(a, 5 * MiB);
    EXPECT_EQ(c.cached_bytes(), 6 * MiB);
    void* b = c.get(6 * MiB - 100);  // same 6 MiB class
    EXPECT_EQ(b, a);
    EXPECT_EQ(c.stats().exact, 1u);
    EXPECT_EQ(c.cached_bytes(), 0u);
    c.put(b, 6 * MiB - 100);

    void* s = c.get(1000);  // small blocks: 64-byte aligned, reused by exact class
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(s) % 64, 0u);
    c.put(s, 1000);
    EXPECT_EQ(c.get(1020), s);
    c.put(s, 1020);
}

TEST(BlockCache, LargerBlockCutToSize) {
    BlockCache c(64 * MiB);
    void* a = c.get(10 * MiB);
    c.put(a, 10 * MiB);
    void* b = c.get(2 * MiB);  // served by the 10 MiB block (> 4 x 2 MiB), whose tail goes back to the system
    EXPECT_EQ(b, a);
    EXPECT_EQ(c.stats().cut, 1u);
    EXPECT_EQ(c.cached_bytes(), 0u);
    fill(b, 2 * MiB, 1);
    c.put(b, 2 * MiB);
    EXPECT_EQ(c.cached_bytes(), 2 * MiB);
}

TEST(BlockCache, SlightlyLargerBlockUsedWhole) {
    BlockCache c(64 * MiB);
    void* a = c.get(8 * MiB);
    c.put(a, 8 * MiB);
    void* b = c.get(3 * MiB);  // 8 <= 4 x 4 (the 4 MiB class): used whole, its pages stay mapped
    EXPECT_EQ(b, a);
    EXPECT_EQ(c.stats().whole, 1u);
    c.put(b, 3 * MiB);  // comes back as the 8 MiB block it is
    EXPECT_EQ(c.cached_bytes(), 8 * MiB);
    void* d = c.get(8 * MiB);
    EXPECT_EQ(d, a);
    EXPECT_EQ(c.stats().exact, 1u);
    fill(d, 8 * MiB, 9);
    c.put(d, 8 * MiB);
}

TEST(BlockCache, SmallerBlockGrownKeepsItsContents) {
#if !defined(__linux__)
    GTEST_SKIP() << "growing a block in place needs Linux's mremap";
#endif
    BlockCache c(64 * MiB);
    void* a = c.get(4 * MiB);
    fill(a, 4 * MiB, 0x5a);
    c.put(a, 4 * MiB);
    void* b = c.get(9 * MiB);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(c.stats().grown, 1u);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b) % (2 * MiB), 0u);
    EXPECT_TRUE(all_are(b, 4 * MiB, 0x5a));  // the pages moved with the block
    fill(b, 10 * MiB, 3);                    // and the growth is writable
    EXPECT_TRUE(all_are(b, 10 * MiB, 3));
    c.put(b, 9 * MiB);
}

TEST(BlockCache, BoundHeld) {
    BlockCache c(8 * MiB);
    std::vector<void*> v;
    for (int i = 0; i < 6; ++i) v.push_back(c.get(4 * MiB));
    for (void* p : v) {
        c.put(p, 4 * MiB);
        EXPECT_LE(c.cached_bytes(), 8 * MiB);
    }
    EXPECT_EQ(c.cached_bytes(), 8 * MiB);
    EXPECT_EQ(c.stats().freed, 4u);
    // A small block makes room by evicting nothing larger than itself: it is not cached when full.
    void* s = c.get(4096);
    c.put(s, 4096);
    EXPECT_EQ(c.cached_bytes(), 8 * MiB);
    // A larger block evicts the smaller ones it outranks.
    void* big = c.get(30 * MiB);  // grows a cached 4 MiB block
    c.put(big, 30 * MiB);         // 30 MiB > bound: returned to the system
    EXPECT_LE(c.cached_bytes(), 8 * MiB);
    void* six = c.get(6 * MiB);   // grows the remaining 4 MiB block
    c.put(six, 6 * MiB);          // room for it: cached
    EXPECT_LE(c.cached_bytes(), 8 * MiB);
}

TEST(BlockCache, NoCache) {
    BlockCache c(0);
    void* a = c.get(3 * MiB);
    c.put(a, 3 * MiB);
    EXPECT_EQ(c.cached_bytes(), 0u);
    EXPECT_EQ(c.stats().freed, 1u);
}
