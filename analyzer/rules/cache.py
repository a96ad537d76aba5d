"""The shipped catalogue's parsed YAML, kept between runs: building its Python objects from 480 KB of
YAML is most of the rules' start-up (about 70 ms of a 0.2 s scan of a small log), and it never changes
between two runs of one install.

The data is cached as ``marshal`` bytes (the format of ``.pyc`` files; safe types only, as YAML's safe
loader makes), in a file whose name is a 256-bit digest (BLAKE2b) of everything the data depends on: the
catalogue's bytes, the YAML library's files (its version, whether its C parser is built) and Python's
version. An edited catalogue, another PyYAML or another Python reads a different name, so a stale file is
never used; the cached data is also checked against its key inside the file. The file goes where ``.pyc``
files go, ``__pycache__`` beside the catalogue, and only there: whoever can write it can rewrite the package's
code too, so it trusts nobody new (a directory shared with the code under test, such as ``~/.cache`` on
a self-hosted runner, would let a test's output blind the next job's scan). Where it cannot be written
(a read-only install), or where Python is told not to write bytecode (``PYTHONDONTWRITEBYTECODE``), the
catalogue is parsed every run, as without a cache. Only the data is cached: every check and compile of
the rules still runs on it, so a change to the package's code takes effect at once.

``cached_rules`` keeps the catalogue's checked rules themselves the same way (pickled: ``parse_rule``'s
checks were about 9 ms of every run), keyed also by the source of the code that builds them (this
package's modules and ``analyzer/model.py``), so an edit to that code takes effect at once as well.
Pickled data runs code when it loads; in ``__pycache__`` beside the package's code it trusts nobody
the ``.pyc`` files do not already trust. ``cached_value`` keeps other data the same way, under its own
file name prefix and a key made of everything it is built from: the scanner's compiled Hyperscan
databases (``analyzer.scan._hyperscan``), whose compile was most of what was left of a small log's
start-up once the catalogue was cached.
"""

from __future__ import annotations

import marshal
import os
import sys
from typing import Any, Callable, List, Optional, Sequence

# CPython's own hashes, as random.py takes its sha512: hashlib loads OpenSSL first (about 3 ms). BLAKE2b
# (in CPython since 3.6) is three times as fast as its own SHA-256: 0.7 against 2.1 ms for the 670 KB
# catalogue that every run hashes at its start to find its cache.
try:
    from _blake2 import blake2b as _blake2b

    def _digest(data: bytes = b"") -> Any:
        """A 256-bit digest of ``data`` (``update`` it with more)."""
        return _blake2b(data, digest_size=32)
except ImportError:  # a Python built without it
    try:
        from _sha256 import sha256 as _digest  # Python 3.11 and before
    except ImportError:
        try:
            from _sha2 import sha256 as _digest  # Python 3.12 and after
        except ImportError:
            from hashlib import sha256 as _digest


CACHE_FORMAT = b"gpu-hang-guard catalogue cache 1"  # change when the cached data's meaning changes
_PREFIX = "catalogue-"
_RULES_FORMAT = b"gpu-hang-guard checked rules 1"  # change when the cached rules' meaning changes
_RULES_PREFIX = "rules-"
_SUFFIX = ".marshal"
_READ_ERRORS = (OSError, EOFError, ValueError, TypeError)


def yaml_library() -> bytes:
    """PyYAML as installed, read from its files without importing it (a cache hit then imports no
    PyYAML, about 15 ms of start-up): its ``__init__.py``, which sets its version, and the names of
    its package's files, its C extension's among them. Empty where it is not installed."""
    import importlib.util

    spec = importlib.util.find_spec("yaml")
    if spec is None or not spec.origin or not spec.submodule_search_locations:
        return b""
    try:
        with open(spec.origin, "rb") as handle:
            init = handle.read()
        names = sorted(name for place in spec.submodule_search_locations for name in os.listdir(place)
                       if name != "__pycache__")  # there or not, as the first import wrote it
    except OSError:
        return b""
    return init + b"\0" + "\0".join(names).encode("utf-8", "surrogateescape")


def cache_key(raw: bytes) -> str:
    """The name part of the cache file of a catalogue whose bytes are ``raw``."""
    digest = _digest(CACHE_FORMAT)
    for part in (yaml_library(), sys.version.encode("utf-8", "backslashreplace"), raw):
        digest.update(b"\0" + part)
    return digest.hexdigest()


def cache_dirs(catalogue_path: str) -> List[str]:
    """Where the cache of the catalogue at ``catalogue_path`` may be, in the order they are tried."""
    return [os.path.join(os.path.dirname(os.path.abspath(catalogue_path)), "__pycache__")]


def cached_yaml(
    path: str, raw: bytes, parse: Callable[[], Any], dirs: Optional[List[str]] = None,
    write: Optional[bool] = None,
) -> Any:
    """``parse()`` (the YAML data of the file at ``path``, whose bytes are ``raw``), read from the cache
    when a run made it before, else parsed and cached for the next run. ``dirs``: where the cache may
    be (``cache_dirs(path)``); ``write``: whether a parse is cached (by default unless Python writes no
    bytecode). Raises only what ``parse`` raises; a cache that cannot be read or written is passed over."""
    places = cache_dirs(path) if dirs is None else dirs
    return cached_value(_PREFIX, cache_key(raw), parse, places, write)


def cached_rules(
    path: str, raw: bytes, build: Callable[[], Any], options: bytes, dirs: Optional[List[str]] = None,
    write: Optional[bool] = None,
) -> Any:
    """``build()`` (the checked rules of the catalogue at ``path``, whose bytes are ``raw``, built with
    ``options``), read from the cache when a run made it before, else built and cached for the next
    run; ``dirs`` and ``write`` as for ``cached_yaml``. Raises only what ``build`` raises."""
    key = value_key(_RULES_FORMAT, (yaml_library(), code_digest(), options, raw))
    built: List[Any] = []

    def pickled() -> bytes:
        import pickle  # only on the run that writes the cache

        built.append(build())
        return pickle.dumps(built[0], protocol=4)

    places = cache_dirs(path) if dirs is None else dirs
    data = cached_value(_RULES_PREFIX, key, pickled, places, write)
    if built:
        return built[0]
    try:
        return _unpickle(data)
    except Exception:  # a damaged file under the right key: build and write it again
        cached_value(_RULES_PREFIX, key, pickled, places, write, read=False)
        return built[0]


def code_digest() -> bytes:
    """The digest of the source of the code that builds the rules: this package's modules and the
    shared ``analyzer/model.py`` (empty for a module that cannot be read)."""
    here = os.path.dirname(os.path.abspath(__file__))
    digest = _digest()
    try:
        names = sorted(name for name in os.listdir(here) if name.endswith(".py"))
    except OSError:
        names = []
    for path in [os.path.join(here, name) for name in names] + [os.path.join(here, "..", "model.py")]:
        try:
            with open(path, "rb") as handle:
                source = handle.read()
        except OSError:
            source = b""
        digest.update(b"%d:%s" % (len(source), os.path.basename(path).encode("utf-8", "surrogateescape")))
        digest.update(source)
    return digest.digest()


def _unpickle(data: Any) -> Any:
    try:  # CPython's C unpickler without the pickle module's own import (about 1.5 ms)
        from _pickle import loads
    except ImportError:
        from pickle import loads
    if not isinstance(data, bytes):
        raise TypeError(type(data).__name__)
    return loads(data)


def builtin_cache_dirs() -> List[str]:
    """Where data built from the shipped package (its catalogue, the scanner's databases) is cached:
    ``__pycache__`` beside the catalogue, as ``cache_dirs`` of the shipped catalogue."""
    return [os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__")]


def value_key(fmt: bytes, parts: Sequence[bytes]) -> str:
    """The 256-bit digest (hex) of ``fmt`` (the format of the cached data: change it when its meaning
    changes), Python's version and ``parts``, each part delimited by its length."""
    digest = _digest(fmt)
    for part in (sys.version.encode("utf-8", "backslashreplace"), *parts):
        digest.update(b"%d:" % len(part))
        digest.update(part)
    return digest.hexdigest()


def cached_value(
    prefix: str, key: str, build: Callable[[], Any], dirs: Optional[List[str]] = None,
    write: Optional[bool] = None, read: bool = True,
) -> Any:
    """``build()``, read from the file ``{prefix}{key}.marshal`` in ``dirs`` (default
    ``builtin_cache_dirs()``) when a run cached it before, else built and cached for the next run
    (unless ``write`` is false; by default unless Python writes no bytecode), removing the older files
    of ``prefix``. ``key`` names everything the data is built from (``value_key``); ``build()`` returns
    what ``marshal`` can write; ``read=False`` builds and writes it anew. Raises only what ``build``
    raises."""
    name = prefix + key + _SUFFIX
    places = builtin_cache_dirs() if dirs is None else dirs
    for place in places if read else ():
        data = _read(os.path.join(place, name), key)
        if data is not None:
            return data[1]
    data = build()
    if write is None:
        write = not sys.dont_write_bytecode
    for place in places if write else ():
        if _write(place, name, key, data, prefix):
            break
    return data


def _read(path: str, key: str) -> Optional[tuple]:
    """(key, data) from the cache file at ``path`` when it holds the data of ``key``, else None."""
    try:
        with open(path, "rb") as handle:
            found = marshal.loads(handle.read())
    except _READ_ERRORS:
        return None
    if isinstance(found, tuple) and len(found) == 2 and found[0] == key:
        return found
    return None


def _write(place: str, name: str, key: str, data: Any, prefix: str) -> bool:
    """Write ``(key, data)`` to ``place/name`` whole or not at all, and remove the place's older
    files of ``prefix``; whether it was written."""
    try:
        payload = marshal.dumps((key, data))
    except ValueError:  # a type marshal cannot write (YAML's dates): nothing to cache
        return False
    tmp = None
    try:
        os.makedirs(place, exist_ok=True)
        import tempfile  # only on the run that writes the cache

        fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=place)
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            os.fchmod(handle.fileno(), 0o644)  # as a .pyc: other users of a shared install read it too
        os.replace(tmp, os.path.join(place, name))  # atomic: a concurrent run reads the old or the new
        tmp = None
    except OSError:
        return False
    finally:
        if tmp is not None:
            _unlink(tmp)
    try:
        others = [other for other in os.listdir(place) if other.startswith(prefix) and other != name]
    except OSError:
        others = []
    for other in others:
        if other.endswith(_SUFFIX):
            _unlink(os.path.join(place, other))
    return True


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:  # gone already (another run cleaned up), or not ours to remove
        pass
