"""The key store: per-root secrets kept outside every root, owner-only.

Layout (every directory 0700, every file 0600, owned by this user, no symlinks, one link)::

    <store>/                      default $XDG_STATE_HOME/memory-es/keys
                                  (else ~/.local/state/memory-es/keys)
      <root id>/                  one directory per root: 32 hex digits, random, recorded in
                                  the root's schema marker
        chain.key                 32 random bytes: the HMAC-SHA256 key of the journal chain
        records.db                the per-record AES-GCM keys of sealed content (forget
                                  destroys them; ``journal.records``)

Both share one location and one set of hygiene checks (``private_key_file``).

Where the store is: an explicit ``key_store`` argument, else the ``MEMORY_ES_KEY_STORE``
environment variable (read when a journal is opened, never by projections), else the default
above. The store may not be inside the root it keys: a copy of the root would carry its key.

Nothing here ever falls back: a missing key is ``chain_key_missing``, an unsafe store is
``key_store_unsafe``, and a key is minted only for a root id that has none.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from memory_es.errors import MemoryEsError

KEY_STORE_ENV = "MEMORY_ES_KEY_STORE"
CHAIN_KEY_FILE = "chain.key"
KEY_BYTES = 32
_ROOT_ID = re.compile(r"[0-9a-f]{32}")


class KeyStoreError(MemoryEsError):
    """The key store is missing a key (``chain_key_missing``) or is unsafe
    (``key_store_unsafe``); the root fails closed."""


def new_root_id() -> str:
    """A fresh random root id: 128 bits, 32 lowercase hex digits."""
    return secrets.token_hex(16)


def valid_root_id(root_id: object) -> bool:
    return isinstance(root_id, str) and _ROOT_ID.fullmatch(root_id) is not None


def default_location() -> Path:
    """``$XDG_STATE_HOME/memory-es/keys`` (an absolute XDG_STATE_HOME only, per the XDG spec),
    else ``~/.local/state/memory-es/keys``."""
    state = os.environ.get("XDG_STATE_HOME", "")
    base = Path(state) if state and os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / "memory-es" / "keys"


def _unsafe(path: Path, why: str) -> KeyStoreError:
    return KeyStoreError(f"key_store_unsafe: {path}: {why}; the key store must be owner-only "
                         "(directories 0700, files 0600, no symlinks)", code="key_store_unsafe")


def _check_fd(fd: int, path: Path, *, is_dir: bool) -> None:
    st = os.fstat(fd)
    if is_dir and not stat.S_ISDIR(st.st_mode):
        raise _unsafe(path, "is not a directory")
    if not is_dir and not stat.S_ISREG(st.st_mode):
        raise _unsafe(path, "is not a regular file")
    if st.st_uid != os.geteuid():
        raise _unsafe(path, f"owned by uid {st.st_uid}, not {os.geteuid()}")
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        raise _unsafe(path, f"mode {mode:04o} has group/other bits")
    if not is_dir and st.st_nlink != 1:
        raise _unsafe(path, f"{st.st_nlink} hard links")


def _open_dir(path: Path, *, parent: int | None = None) -> int:
    """Open a directory without following a symlink at its last component, and check it."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path.name if parent is not None else path, flags, dir_fd=parent)
    except NotADirectoryError:
        raise _unsafe(path, "is a symlink or not a directory") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise _unsafe(path, "is a symlink") from None
        raise
    try:
        _check_fd(fd, path, is_dir=True)
    except BaseException:
        os.close(fd)
        raise
    return fd


class KeyStore:
    """The owner-only directory of per-root keys."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(os.path.abspath(os.fspath(path)))

    @classmethod
    def resolve(cls, explicit: str | Path | KeyStore | None = None) -> KeyStore:
        """The explicit store, else ``$MEMORY_ES_KEY_STORE``, else the default location."""
        if isinstance(explicit, KeyStore):
            return explicit
        if explicit is not None and os.fspath(explicit) != "":
            return cls(explicit)
        env = os.environ.get(KEY_STORE_ENV, "")
        return cls(env if env else default_location())

    def check_outside(self, root: Path) -> None:
        """Refuse a store inside ``root`` (or a root inside the store): a copy or a backup of
        the root would carry the key that authenticates it."""
        store, where = Path(os.path.realpath(self.path)), Path(os.path.realpath(root))
        if store == where or where in store.parents or store in where.parents:
            raise KeyStoreError(
                f"key_store_unsafe: {self.path}: the key store must be outside the memory root "
                f"{root} (set {KEY_STORE_ENV} or pass key_store)", code="key_store_unsafe")

    def _root_dir(self, root_id: str) -> Path:
        if not valid_root_id(root_id):
            raise KeyStoreError(f"chain_key_missing: root id {root_id!r} is malformed",
                                code="chain_key_missing")
        return self.path / root_id

    def load_chain_key(self, root_id: str) -> bytes:
        """The chain key of ``root_id``; fails closed when it is absent or unsafe."""
        root_dir = self._root_dir(root_id)
        key_path = root_dir / CHAIN_KEY_FILE
        missing = KeyStoreError(
            f"chain_key_missing: {key_path}: no chain key for this root (root id {root_id}); "
            f"the root cannot be verified without it: restore the key store or point "
            f"{KEY_STORE_ENV} at the one holding it", code="chain_key_missing")
        try:
            store_fd = _open_dir(self.path)
        except FileNotFoundError:
            raise missing from None
        try:
            try:
                dir_fd = _open_dir(root_dir, parent=store_fd)
            except FileNotFoundError:
                raise missing from None
            try:
                try:
                    fd = os.open(CHAIN_KEY_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC,
                                 dir_fd=dir_fd)
                except FileNotFoundError:
                    raise missing from None
                except OSError as e:
                    if e.errno == errno.ELOOP:
                        raise _unsafe(key_path, "is a symlink") from None
                    raise
                try:
                    _check_fd(fd, key_path, is_dir=False)
                    key = os.pread(fd, KEY_BYTES + 1, 0)
                finally:
                    os.close(fd)
            finally:
                os.close(dir_fd)
        finally:
            os.close(store_fd)
        if len(key) != KEY_BYTES:
            raise KeyStoreError(f"chain_key_missing: {key_path}: holds {len(key)} bytes, not a "
                                f"{KEY_BYTES}-byte key", code="chain_key_missing")
        return key

    def create_chain_key(self, root_id: str) -> bytes:
        """Mint the chain key of a new root id (32 bytes from ``secrets``), durably. Refuses
        an id that already has a directory: a key is never replaced."""
        return self.install_chain_key(root_id, secrets.token_bytes(KEY_BYTES))

    def install_chain_key(self, root_id: str, key: bytes) -> bytes:
        """Hold ``key`` as the chain key of ``root_id`` (a restored backup's), durably, with
        the same refusal: an id that already has a directory keeps what it has."""
        if len(key) != KEY_BYTES:
            raise KeyStoreError(f"chain_key_missing: a chain key is {KEY_BYTES} bytes, not "
                                f"{len(key)}", code="chain_key_missing")
        root_dir = self._root_dir(root_id)
        self._make_store()
        store_fd = _open_dir(self.path)
        try:
            try:
                os.mkdir(root_id, 0o700, dir_fd=store_fd)
            except FileExistsError:
                raise KeyStoreError(f"key_store_unsafe: {root_dir}: already exists; refusing "
                                    "to replace a root's key", code="key_store_unsafe") from None
            dir_fd = _open_dir(root_dir, parent=store_fd)
            try:
                fd = os.open(CHAIN_KEY_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                             | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
                try:
                    os.fchmod(fd, 0o600)
                    os.write(fd, key)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
            os.fsync(store_fd)
        finally:
            os.close(store_fd)
        return key

    def _make_store(self) -> None:
        """Create the store (and its missing parents) owner-only; an existing store is only
        checked, never re-moded."""
        missing: list[Path] = []
        path = self.path
        while not os.path.lexists(path) and path != path.parent:
            missing.append(path)
            path = path.parent
        for directory in reversed(missing):
            with contextlib.suppress(FileExistsError):
                os.mkdir(directory, 0o700)
        os.close(_open_dir(self.path))


@contextlib.contextmanager
def throwaway_key_store() -> Iterator[Path]:
    """For the block, chain keys go to a temporary key store that is removed afterwards, never
    to the user's own: for roots that are themselves thrown away (the demo, benchmarks,
    fixture regeneration). Subprocesses started in the block inherit it."""
    saved = os.environ.get(KEY_STORE_ENV)
    with tempfile.TemporaryDirectory(prefix="memory-es-keys-") as tmp:
        os.environ[KEY_STORE_ENV] = tmp
        try:
            yield Path(tmp)
        finally:
            if saved is None:
                os.environ.pop(KEY_STORE_ENV, None)
            else:
                os.environ[KEY_STORE_ENV] = saved


RECORDS_FILE = "records.db"


def private_key_file(store: KeyStore, root_id: str, name: str, *, create: bool) -> Path | None:
    """The path of a per-root secret file ``name`` after the store's hygiene checks (0700
    directories, a 0600 regular file of ours with one link, no symlink anywhere); None when it
    does not exist and ``create`` is false. Created ``O_EXCL`` 0600 when asked. Used for the
    per-record key database (``records.db``), which SQLite then opens without following links.
    """
    root_dir = store._root_dir(root_id)
    if create:
        store._make_store()
    try:
        store_fd = _open_dir(store.path)
    except FileNotFoundError:
        return None
    try:
        try:
            dir_fd = _open_dir(root_dir, parent=store_fd)
        except FileNotFoundError:
            if not create:
                return None
            os.mkdir(root_id, 0o700, dir_fd=store_fd)
            os.fsync(store_fd)
            dir_fd = _open_dir(root_dir, parent=store_fd)
        try:
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                fd = os.open(name, flags, dir_fd=dir_fd)
            except FileNotFoundError:
                if not create:
                    return None
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                             | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
                os.fchmod(fd, 0o600)
                os.fsync(dir_fd)
            except OSError as e:
                if e.errno == errno.ELOOP:
                    raise _unsafe(root_dir / name, "is a symlink") from None
                raise
            try:
                _check_fd(fd, root_dir / name, is_dir=False)
            finally:
                os.close(fd)
            for suffix in ("-wal", "-shm"):  # SQLite's companions get the same checks
                try:
                    fd = os.open(name + suffix, flags, dir_fd=dir_fd)
                except FileNotFoundError:
                    continue
                except OSError as e:
                    if e.errno == errno.ELOOP:
                        raise _unsafe(root_dir / (name + suffix), "is a symlink") from None
                    raise
                try:
                    _check_fd(fd, root_dir / (name + suffix), is_dir=False)
                finally:
                    os.close(fd)
        finally:
            os.close(dir_fd)
    finally:
        os.close(store_fd)
    return root_dir / name
