"""Shared-memory buffers for the local pool (and the Dask executor on one host).

A value moves between the processes of one machine as Ember's bytes written straight into shared memory
(Ciphertext.write_into: one pass, validated) and read in place by the other process (from_bytes of its mapping:
one pass, validated) -- no pickling, no copy through a pipe.

An Arena is one process's buffers: files /dev/shm/ember-<tag>-<n> (mode 0600), each mapped once and reused once
released (a reused buffer has no page faults to pay), plus the read-only mappings of other processes' buffers,
cached by name. The writer owns its buffers; the reader is told the (name, size) of a value through the pipe and
reports back when it has opened it (the pool's protocol, ember.run.pool). Files survive the death of the process
that wrote them (tmpfs), so a value published by a worker that is then killed is not lost; remove_tagged() cleans
up after a process that cannot.

Where /dev/shm does not exist or is small (a container's default 64 MiB holds two ciphertexts at N = 2^16), the
files live in the temporary directory (tmpfs on some systems, otherwise the page cache: still shared between the
processes); EMBER_SHM_DIR names another directory (every process of the host must see the same one).
"""
from __future__ import annotations

import mmap
import os
import tempfile
import threading
from typing import Optional

_DIR: Optional[str] = None
PREFIX = "ember-"


MIN_SHM_BYTES = 1 << 30     # a /dev/shm smaller than this (Docker's default is 64 MiB) is not used


def choose_dir(env: Optional[str], shm: str = "/dev/shm") -> str:
    """Return the directory where the buffers live.

    $EMBER_SHM_DIR when set (it must be a writable directory), else /dev/shm when it is writable and at least
    MIN_SHM_BYTES in size, else the temporary directory (files in the page cache: still shared, a little slower).
    The choice depends only on the environment and the mount's size, never on its free space, so every process of
    a host makes the same one.

    Parameters
    ----------
    env : str or None
        The value of $EMBER_SHM_DIR.
    shm : str, optional
        The shared-memory mount to try (default ``"/dev/shm"``).

    Returns
    -------
    str
        The directory.

    Raises
    ------
    ValueError
        If `env` is set and is not a writable directory.
    """
    if env:
        if not (os.path.isdir(env) and os.access(env, os.W_OK)):
            raise ValueError(f"EMBER_SHM_DIR={env!r} is not a writable directory")
        return env
    if os.path.isdir(shm) and os.access(shm, os.W_OK):
        try:
            st = os.statvfs(shm)
            if st.f_blocks * st.f_frsize >= MIN_SHM_BYTES:
                return shm
        except OSError:
            pass
    return tempfile.gettempdir()


def shm_dir() -> str:
    """Return this process's buffer directory (:func:`choose_dir` of $EMBER_SHM_DIR, chosen once)."""
    global _DIR
    if _DIR is None:
        _DIR = choose_dir(os.environ.get("EMBER_SHM_DIR"))
    return _DIR


def _path(name: str) -> str:
    if not name.startswith(PREFIX) or "/" in name or name in (".", ".."):
        raise ValueError(f"not an ember shared-memory buffer name: {name!r}")
    return os.path.join(shm_dir(), name)


class Arena:
    """The shared-memory buffers of one process.

    ``write(value) -> (name, size)``; ``view(name, size) -> memoryview``. Its files are named
    ``ember-<tag>-<n>``.

    Parameters
    ----------
    tag : str
        The tag in the names of its files.
    """

    def __init__(self, tag: str):
        self.tag = tag
        self._n = 0
        self._own: dict[str, mmap.mmap] = {}     # name -> its mapping (read-write)
        self._free: list[str] = []               # own buffers that may be reused
        self._maps: dict[str, mmap.mmap] = {}    # other processes' buffers (read-only)
        self._writing: set[str] = set()          # own buffers being written now (release_all keeps them)
        self._lock = threading.RLock()           # a worker writes, reads and releases from different threads

    # writing ---------------------------------------------------------------------------------------------------
    def write(self, value) -> tuple[str, int]:
        """Write a value into a free buffer of this process (a new one if none is large enough).

        Parameters
        ----------
        value : Ciphertext or Plaintext
            The ember value.

        Returns
        -------
        name : str
            The buffer's name.
        size : int
            The value's byte count.

        Raises
        ------
        OSError
            If the space for a new buffer cannot be reserved.
        """
        size = value.serialized_size()
        with self._lock:
            name = self._take(size)
            m = self._own[name]
            self._writing.add(name)
        try:
            with memoryview(m) as mv, mv[:size] as dst:
                value.write_into(dst)
        finally:
            with self._lock:
                self._writing.discard(name)
        return name, size

    def _take(self, size: int) -> str:
        best = None
        for name in self._free:
            cap = len(self._own[name])
            if cap >= size and (best is None or cap < len(self._own[best])):
                best = name
        if best is not None:
            self._free.remove(best)
            return best
        name = f"{PREFIX}{self.tag}-{self._n}"
        self._n += 1
        path = _path(name)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            try:    # reserve the space now: a full /dev/shm is an OSError here, not a SIGBUS when written
                os.posix_fallocate(fd, 0, size)
            except OSError as e:
                os.close(fd)
                fd = -1
                unlink(name)
                raise OSError(e.errno, f"ember shared memory: cannot reserve {size} bytes in {shm_dir()} ({e.strerror}); "
                                       "free space there or use fewer / smaller values at once") from None
            except AttributeError:  # no posix_fallocate on this system
                os.ftruncate(fd, size)
            self._own[name] = mmap.mmap(fd, size, flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0),
                                        prot=mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            if fd >= 0:
                os.close(fd)
        return name

    def release(self, name: str) -> None:
        """Let an own buffer be reused: its value has been read by everyone who needed it."""
        with self._lock:
            if name in self._own and name not in self._free:
                self._free.append(name)

    def release_all(self) -> None:
        """Let every own buffer be reused, but those being written now."""
        with self._lock:
            self._free = [n for n in self._own if n not in self._writing]

    def owns(self, name: str) -> bool:
        """Return whether `name` is one of this process's own buffers."""
        return name in self._own

    def nbytes(self) -> int:
        """Bytes of shared memory this process holds (its own buffers)."""
        return sum(len(m) for m in self._own.values())

    # reading ---------------------------------------------------------------------------------------------------
    def view(self, name: str, size: int) -> memoryview:
        """Return the first `size` bytes of a buffer (this process's or another's), mapped once and cached.

        The caller releases the view (a with block) before the arena is closed.

        Parameters
        ----------
        name : str
            The buffer's name.
        size : int
            The byte count to view.

        Returns
        -------
        memoryview
            The bytes, read in place.

        Raises
        ------
        ValueError
            If the buffer holds fewer than `size` bytes, or `name` is not an ember buffer's name.
        """
        with self._lock:
            m = self._own.get(name)
            if m is None:
                m = self._maps.get(name)
                if m is None or len(m) < size:
                    if m is not None:
                        _close(m)
                    fd = os.open(_path(name), os.O_RDONLY)
                    try:    # populated now: one call instead of a page fault per page on first read
                        m = mmap.mmap(fd, 0, flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0),
                                      prot=mmap.PROT_READ)
                    finally:
                        os.close(fd)
                    self._maps[name] = m
        if len(m) < size:
            raise ValueError(f"shared-memory buffer {name} holds {len(m)} bytes, {size} expected")
        return memoryview(m)[:size]

    def forget(self, name: str) -> None:
        """Drop the mapping of another process's buffer."""
        with self._lock:
            m = self._maps.pop(name, None)
        if m is not None:
            _close(m)

    def forget_tagged(self, tag: str) -> None:
        """Drop the mappings of every other process's buffer named ember-<tag>..."""
        start = f"{PREFIX}{tag}"
        with self._lock:
            names = [n for n in self._maps if n.startswith(start)]
        for n in names:
            self.forget(n)

    # cleanup ---------------------------------------------------------------------------------------------------
    def close(self) -> None:
        """Unmap everything and remove this process's files."""
        for m in self._maps.values():
            _close(m)
        self._maps.clear()
        for name, m in self._own.items():
            _close(m)
            unlink(name)
        self._own.clear()
        self._free.clear()


_READER: Optional[Arena] = None
_HOST: Optional[str] = None


def reader() -> Arena:
    """Return the arena through which this process reads other processes' buffers.

    Mappings are cached by name: a buffer that is reused for the next value is read again with no new mapping.
    """
    global _READER
    with _GLOBAL_LOCK:
        if _READER is None:
            _READER = Arena(f"r{os.getpid()}")
        return _READER


def host_key() -> str:
    """Return a key naming this host's shared memory: processes with equal keys can read each other's buffers.

    The host name, the kernel's boot id and the device and inode of the buffers' directory (containers on one host
    that do not share /dev/shm differ in the last two).
    """
    global _HOST
    if _HOST is None:
        import socket
        try:
            with open("/proc/sys/kernel/random/boot_id") as f:
                boot = f.read().strip()
        except OSError:
            boot = "-"
        st = os.stat(shm_dir())
        _HOST = f"{socket.gethostname()}|{boot}|{st.st_dev}:{st.st_ino}"
    return _HOST


_GLOBAL_LOCK = threading.Lock()
_TAGGED: dict[str, Arena] = {}


def arena_for(tag: str) -> Arena:
    """Return the arena of this process for an executor's tag (its files: ember-<tag>p<pid>-<n>).

    Made on first use.
    """
    with _GLOBAL_LOCK:
        a = _TAGGED.get(tag)
        if a is None:
            a = _TAGGED[tag] = Arena(f"{tag}p{os.getpid()}")
        return a


def release_tagged(tag: str) -> int:
    """Let every buffer of this process's arena for `tag` be reused (the executor's run is over).

    Returns their bytes (0 when this process has no arena for `tag`).
    """
    with _GLOBAL_LOCK:
        a = _TAGGED.get(tag)
    if a is None:
        return 0
    a.release_all()
    return a.nbytes()


def drop_tagged(tag: str) -> None:
    """Close this process's arena for `tag` and drop its mappings of other processes' buffers of that tag.

    For an executor that is closed: the arena's files are removed.
    """
    with _GLOBAL_LOCK:
        a = _TAGGED.pop(tag, None)
        r = _READER
    if a is not None:
        a.close()
    if r is not None:
        r.forget_tagged(tag)


def _close(m: mmap.mmap) -> None:
    try:
        m.close()
    except BufferError:  # a view still exported: the mapping goes when it is collected
        pass


def unlink(name: str) -> None:
    """Remove the file of buffer `name` (nothing if it is gone already)."""
    try:
        os.unlink(_path(name))
    except FileNotFoundError:
        pass


def remove_tagged(tag: str) -> list[str]:
    """Remove every buffer file whose name starts with ember-<tag> (a dead process's, or a closed pool's).

    Returns their names.
    """
    start = f"{PREFIX}{tag}"
    try:
        names = [n for n in os.listdir(shm_dir()) if n.startswith(start)]
    except OSError:
        return []
    for name in names:
        unlink(name)
    return names
