"""llama.cpp's own ``llama-server`` (which takes token ids on ``/completion``), built from the
llama.cpp sources vendored in llama-cpp-python's source distribution, the version installed here,
so the server runs the same engine as the in-process ``llamacpp/`` backend.

The wheel ships no server binary, and llama-cpp-python's Python server takes no token ids. The
build is cached under the user cache folder (``~/.cache/rotscope/llama-server/VERSION-KEY/``) keyed
by the version and this CPU's feature flags (the build is native: ``GGML_NATIVE``), with its
``build.json`` (version, flags, cold build seconds: 583 s on 2 cores for the first cached build;
this module's download, configure step and ``llama-server`` target were checked against that
source distribution on 2026-12-03, its full cold build not run again). Building is an explicit
setup step, never part of a run: ``python -m rotscope.backends.llamacpp.server_build --build``
downloads the source distribution from the package index with pip and runs cmake's
``llama-server`` target; without ``--build`` the command prints the cached binary or says none is.

On a CPU with AMX, llama.cpp's AMX weight buffer crashes a multi-token prefill (the crash the
engine probe, ``extra_buffers``, handles in process); ``server_command`` starts the server with
``--no-repack`` there, which turns the extra weight buffers (repack and AMX) off.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from rotscope._util.cache_dir import user_cache_dir
from rotscope._util.checks import Check
from rotscope.backends.llamacpp.extra_buffers import cpu_flags, cpu_has_amx
from rotscope.errors import BadInput

PACKAGE = "llama-cpp-python"
TARGET = "llama-server"
BUILD_RECORD = "build.json"
KEY_FLAGS = (
    "amx_bf16",
    "amx_int8",
    "amx_tile",
    "avx",
    "avx2",
    "avx512_bitalg",
    "avx512_vnni",
    "avx512_vpopcntdq",
    "avx512bw",
    "avx512cd",
    "avx512dq",
    "avx512f",
    "avx512ifma",
    "avx512vbmi",
    "avx512vl",
    "f16c",
    "fma",
    "sse4_2",
)
"""The CPU flags a build is keyed by: those of the vector extensions llama.cpp's native build
compiles for, as the first cached build recorded them."""
CMAKE_OPTIONS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DGGML_NATIVE=ON",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_CURL=OFF",
)


def installed_version() -> str:
    """The installed llama-cpp-python's version; bad input when it is not installed."""
    try:
        return version(PACKAGE)
    except PackageNotFoundError:
        raise BadInput(f"llama-server: {PACKAGE} is not installed (pip install {PACKAGE})") from None


def key_flags(flags: str | None = None) -> str:
    """The key flags this CPU has, sorted, each followed by a space (as ``build.json`` stores them)."""
    present = set((cpu_flags() if flags is None else flags).split())
    return "".join(f"{flag} " for flag in sorted(present & set(KEY_FLAGS)))


def build_key(llama_version: str, flags: str) -> str:
    """``VERSION-HASH``: the first 12 hex digits of sha256 of ``"VERSION FLAGS"``."""
    digest = hashlib.sha256(f"{llama_version} {flags}".encode()).hexdigest()[:12]
    return f"{llama_version}-{digest}"


def cache_root() -> Path:
    return user_cache_dir() / TARGET


def build_folder(llama_version: str | None = None, flags: str | None = None) -> Path:
    """Where this machine's build of ``llama_version`` (the installed one) lies or would lie."""
    llama_version = llama_version or installed_version()
    return cache_root() / build_key(llama_version, key_flags(flags))


def cached_server(llama_version: str | None = None, flags: str | None = None) -> Path | None:
    """The cached ``llama-server`` built from ``llama_version`` for this CPU: the keyed folder's,
    else any cached folder whose ``build.json`` records this version and these flags (a build
    cached under another key); ``None`` when there is none."""
    llama_version = llama_version or installed_version()
    wanted = key_flags(flags)
    folders = [build_folder(llama_version, flags)]
    if cache_root().is_dir():
        folders += sorted(p for p in cache_root().iterdir() if p.is_dir() and p not in folders)
    for folder in folders:
        binary = folder / "bin" / TARGET
        if not binary.is_file():
            continue
        try:
            record = json.loads((folder / BUILD_RECORD).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if record.get("version") == llama_version and key_flags(str(record.get("cpu_flags", ""))) == wanted:
            return binary
    return None


def build_record(binary: Path) -> dict[str, object]:
    """The ``build.json`` beside a cached binary (version, cpu_flags, cold_build_s)."""
    record: dict[str, object] = json.loads((binary.parent.parent / BUILD_RECORD).read_text(encoding="utf-8"))
    return record


def compilers() -> list[str]:
    """The build tools missing here (cmake, a C and a C++ compiler); empty when all are found."""
    wanted = {
        "cmake": ("cmake",),
        "a C compiler": ("cc", "gcc", "clang"),
        "a C++ compiler": ("c++", "g++", "clang++"),
    }
    return [name for name, tools in wanted.items() if not any(shutil.which(tool) for tool in tools)]


def build(llama_version: str | None = None, jobs: int | None = None) -> Path:
    """Build ``llama-server`` from llama-cpp-python's source distribution (fetched by pip from the
    package index) into the cache, recording how long the cold build took; the binary's path."""
    llama_version = llama_version or installed_version()
    missing = compilers()
    if missing:
        raise BadInput(f"llama-server: cannot build it here, missing {', '.join(missing)}")
    folder = build_folder(llama_version)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rotscope-llama-server-") as scratch:
        work = Path(scratch)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps", "-d", str(work),
             f"{PACKAGE}=={llama_version}"],
            check=True,
        )  # fmt: skip
        archive = next(work.glob("llama_cpp_python-*.tar.gz"), None) or next(work.glob("*.tar.gz"))
        with tarfile.open(archive) as sdist:
            sdist.extractall(work / "src", filter="data")
        sources = next((work / "src").glob("*/vendor/llama.cpp"))
        build_dir = work / "build"
        subprocess.run(["cmake", "-S", str(sources), "-B", str(build_dir), *CMAKE_OPTIONS], check=True)
        parallel = ["-j", str(jobs)] if jobs else ["-j"]
        subprocess.run(
            ["cmake", "--build", str(build_dir), "--config", "Release", "--target", TARGET, *parallel],
            check=True,
        )
        (folder / "bin").mkdir(parents=True, exist_ok=True)
        shutil.copy2(build_dir / "bin" / TARGET, folder / "bin" / TARGET)
    record = {
        "version": llama_version,
        "cpu_flags": key_flags(),
        "cold_build_s": round(time.monotonic() - started),
    }
    (folder / BUILD_RECORD).write_text(json.dumps(record), encoding="utf-8")
    return folder / "bin" / TARGET


def server_command(
    binary: Path,
    model: Path,
    *,
    port: int,
    threads: int,
    n_batch: int,
    n_ctx: int,
    parallel: int = 1,
    alias: str | None = None,
    host: str = "127.0.0.1",
    amx: bool | None = None,
) -> list[str]:
    """The command line that serves ``model``: fixed threads and batch, ``parallel`` slots of
    ``n_ctx`` tokens each, flash attention off (as llama-cpp-python's ``Llama`` by default: the
    server's ``auto`` turns it on, and its sums differ in the last bits, enough to change a greedy
    reply); ``--no-repack`` on an AMX CPU (the AMX buffer off)."""
    command = [
        str(binary), "-m", str(model), "--host", host, "--port", str(port),
        "-t", str(threads), "-tb", str(threads), "-b", str(n_batch), "-ub", str(n_batch),
        "-c", str(n_ctx * parallel), "-np", str(parallel), "--seed", "0", "-fa", "off",
    ]  # fmt: skip
    if alias:
        command += ["--alias", alias]
    if cpu_has_amx() if amx is None else amx:
        command.append("--no-repack")
    return command


def doctor_check() -> Check:
    """``rotscope doctor``'s line for the cached ``llama-server`` (``serve/NAME`` on llama.cpp)."""
    try:
        binary = cached_server()
    except BadInput as error:
        return Check("llama-server", "warn", str(error))
    if binary is None:
        return Check(
            "llama-server",
            "warn",
            f"none for this CPU in {cache_root()}"
            " (python -m rotscope.backends.llamacpp.server_build --build)",
        )
    record = build_record(binary)
    return Check("llama-server", "ok", f"{binary} (cold build {record.get('cold_build_s')} s)")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m rotscope.backends.llamacpp.server_build [--build]``: the cached binary's path and
    record, or, with ``--build``, build it first when there is none."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        binary = cached_server()
        if binary is None and "--build" in args:
            binary = build()
    except (BadInput, subprocess.CalledProcessError) as error:
        print(f"llama-server: {error}", file=sys.stderr)
        return 2
    if binary is None:
        print(
            f"llama-server: no build for {PACKAGE} {installed_version()} on this CPU in {cache_root()}; "
            "build it with: python -m rotscope.backends.llamacpp.server_build --build",
            file=sys.stderr,
        )
        return 2
    print(f"{binary} {json.dumps(build_record(binary))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
