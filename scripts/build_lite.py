"""Build the in-browser Python that makes the book's calculators live: the Pyodide runtime and the wheels.

    .venv/bin/python scripts/build_lite.py            # wheels (once), live runtime -> _build/lite
    .venv/bin/python scripts/build_lite.py --wheels   # only download the wheels (setup time; needs PyPI)

Everything a live calculator loads is served by the book itself, so a reader's browser makes no
request to any other host:

* the Pyodide runtime comes from the npm package ``pyodide`` (``package.json``; wasm, stdlib and
  ``pyodide-lock.json``, no wheels);
* the pure-Python wheels ``llmcourse``'s calculators import (sympy, pint, ipywidgets, comm, traitlets
  and their dependencies; no IPython, no Jupyter kernel: ``llmcourse._live`` stands in for them) are
  downloaded once with ``pip download`` into ``_build/lite-wheels``, at the versions the Pyodide lock
  file names (or those pinned below), and ``llmcourse`` itself is built as a wheel from this checkout;
  each is compiled to CPython 3.14 bytecode once (by Pyodide, in node), so the browser does not;
* each wheel is written into the lock file with its file name and real sha256, and ``live.json``
  names the packages a live start loads (in parallel), those fetched only when first imported and then
  imported straight from their wheel (ZIPIMPORT: SymPy, which no calculator imports), and their size.

The runtime is written to ``_build/lite`` (``pyodide/`` and ``live.json``); the book's Sphinx extension
(``_ext/live_calculators.py``) copies it into ``_build/html/lite``, and the page's worker
(``_ext/static/live_worker.js``) loads it. A second run only rebuilds when an input changed (the package
sources, this script, the wheels or the npm runtime).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WHEELS = ROOT / "_build" / "lite-wheels"
OUT = ROOT / "_build" / "lite"
PYODIDE_NPM = ROOT / "node_modules" / "pyodide"
WORKER = ROOT / "_ext" / "static" / "live_worker.js"  # what sets the runtime up (part of the snapshot's key)
PY = Path(sys.executable)

# Packages a live start loads, named as in the Pyodide lock file. Those already in the upstream lock
# are downloaded at the lock's version; the rest are pinned here (as in the venv). Their import names
# are _ext/live_calculators.py's LITE_MODULES (tests/test_live_extension.py checks the two agree).
FROM_LOCK = [
    "traitlets",
    "sympy",
    "mpmath",
    "typing-extensions",
]
# Fetched only when first imported, and imported straight from their wheels (zipimport: a module is decompressed
# when it is first imported): no calculator imports SymPy (llmcourse needs it only for the derivations, and its
# formulas.cache holds the numbers), so a live start does not download it. Only packages that read no data files
# next to their modules qualify (pint and llmcourse do read them). The worker tells llmcourse the SymPy version
# shipped (LLMCOURSE_SYMPY_VERSION: the formulas cache's key) so that import llmcourse need not fetch it to ask.
ZIPIMPORT = ("sympy", "mpmath")
PINNED = {
    "comm": "0.2.3",
    "ipywidgets": "8.1.9",
    "pint": "0.25.3",
    "flexcache": "0.3",
    "flexparser": "0.4",
    "platformdirs": "4.14.9",
}


def norm(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def upstream_lock() -> dict:
    return json.loads((PYODIDE_NPM / "pyodide-lock.json").read_text())


def download_wheels() -> None:
    """``pip download`` the pure-Python wheels (setup time: the only step that needs PyPI)."""
    WHEELS.mkdir(parents=True, exist_ok=True)
    lock = upstream_lock()["packages"]
    specs = [f"{n}=={lock[n]['version']}" for n in FROM_LOCK] + [f"{n}=={v}" for n, v in PINNED.items()]
    missing = [s for s in specs if not _find_wheel(s.split("==")[0], s.split("==")[1])]
    if not missing:
        return
    print(f"downloading {len(missing)} wheels into {WHEELS}")
    subprocess.run(
        [
            str(PY),
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
            "--python-version",
            "3.14",
            "--implementation",
            "py",
            "--abi",
            "none",
            "--platform",
            "any",
            "--dest",
            str(WHEELS),
            *missing,
        ],
        check=True,
    )


def _find_wheel(name: str, version: str | None = None, folder: Path = WHEELS) -> Path | None:
    for whl in folder.glob("*.whl"):
        dist, ver = whl.name.split("-")[:2]
        if norm(dist) == norm(name) and (version is None or ver == version):
            return whl
    return None


def _top_level(whl: Path) -> list[str]:
    """Import names of a wheel (its top-level packages and modules)."""
    with zipfile.ZipFile(whl) as z:
        names = z.namelist()
    tops = set()
    for n in names:
        first = n.split("/")[0]
        if first.endswith((".dist-info", ".data")):
            continue
        tops.add(first[:-3] if first.endswith(".py") else first)
    return sorted(t for t in tops if t and not t.startswith("_"))


def build_package_wheel(dest: Path) -> Path:
    """``llmcourse`` as a wheel, from this checkout."""
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.glob("llmcourse-*.whl"):
        old.unlink()
    subprocess.run(
        [str(PY), "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(dest), str(ROOT)],
        check=True,
    )
    shutil.rmtree(ROOT / "build", ignore_errors=True)
    return next(dest.glob("llmcourse-*.whl"))


COMPILE_JS = """
import { pathToFileURL } from "node:url";
const [pyodideDir, jobs] = process.argv.slice(2);
const { loadPyodide } = await import(pathToFileURL(pyodideDir + "/pyodide.mjs").href);
const py = await loadPyodide({ indexURL: pyodideDir + "/" });
py.FS.mkdirTree("/host");
py.FS.mount(py.FS.filesystems.NODEFS, { root: "/" }, "/host");
py.globals.set("jobs", jobs);
py.runPython(PYCODE);
"""

# Runs inside Pyodide (its CPython 3.14 writes the bytecode that the browser's CPython 3.14 reads).
COMPILE_PY = """
import importlib.util, json, os, sys, zipfile
from importlib._bootstrap_external import _code_to_hash_pyc
tag, site = sys.implementation.cache_tag, '/lib/python%d.%d/site-packages/' % sys.version_info[:2]
for src, dst, keep_source in json.loads(jobs):
    with zipfile.ZipFile('/host' + src) as zin, zipfile.ZipFile('/host' + dst, 'w', zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            name, data = info.filename, zin.read(info)
            if '/tests/' in name and '.dist-info/' not in name:
                continue  # test suites are never imported by the book
            if not name.endswith('.py') or '.dist-info/' in name:
                zout.writestr(info, data)
                continue
            try:
                code = compile(data, site + name, 'exec', dont_inherit=True)
            except SyntaxError:
                zout.writestr(info, data)
                continue
            pyc = bytes(_code_to_hash_pyc(code, importlib.util.source_hash(data), checked=False))
            if keep_source:  # the source stays (readable tracebacks); __pycache__ is used unchecked
                zout.writestr(info, data)
                folder, base = os.path.split(name)
                zout.writestr((folder + '/' if folder else '') + '__pycache__/' + base[:-3] + '.' + tag + '.pyc', pyc)
            else:  # sourceless, as Pyodide ships its own packages
                zout.writestr(name + 'c', pyc)
"""


def py_compile(jobs: list[tuple[Path, Path, bool]]) -> None:
    """Add CPython 3.14 bytecode to wheels (Pyodide compiles it, in node), so the browser does not
    compile sympy, pint, ... at every start. ``jobs``: (wheel, output wheel, keep the source)."""
    if not jobs:
        return
    t0 = time.time()
    script = WHEELS / "py_compile.mjs"
    script.write_text(COMPILE_JS.replace("PYCODE", json.dumps(COMPILE_PY)))
    subprocess.run(
        [
            "node",
            str(script),
            str(PYODIDE_NPM.resolve()),
            json.dumps([[str(s.resolve()), str(d.resolve()), k] for s, d, k in jobs]),
        ],
        check=True,
    )
    print(f"compiled {len(jobs)} wheels to bytecode in {time.time() - t0:.0f} s")


def inputs_digest() -> str:
    """A digest of everything the lite site is built from (to skip a rebuild when nothing changed)."""
    h = hashlib.sha256()
    files = sorted(
        [
            *(ROOT / "llmcourse").rglob("*.py"),
            *(ROOT / "llmcourse" / "data").glob("*.csv"),
            *(ROOT / "llmcourse" / "data").glob("*.json"),
            *(ROOT / "llmcourse" / "data").rglob("*.md"),
            Path(__file__),
            WORKER,
            ROOT / "pyproject.toml",
            PYODIDE_NPM / "package.json",
            *WHEELS.glob("*.whl"),
        ]
    )
    for f in files:
        h.update(str(f.relative_to(ROOT)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def build_site() -> None:
    stamp = OUT / ".inputs-sha256"
    digest = inputs_digest()
    if stamp.exists() and stamp.read_text() == digest:
        print(f"live runtime up to date: {OUT}")
        return
    t0 = time.time()
    if OUT.exists():
        shutil.rmtree(OUT)
    # The Pyodide runtime, served by the site itself.
    pyo = OUT / "pyodide"
    pyo.mkdir(parents=True)
    for f in ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip"):
        shutil.copy2(PYODIDE_NPM / f, pyo / f)
    lock = upstream_lock()
    wheels = [_find_wheel(n, lock["packages"][n]["version"]) for n in FROM_LOCK]
    wheels += [_find_wheel(n, v) for n, v in PINNED.items()]
    if any(w is None for w in wheels):
        sys.exit("missing wheels: run scripts/build_lite.py --wheels (needs PyPI)")
    # Third-party wheels: compiled once (sourceless) into _build/lite-wheels/pyc; llmcourse: at every
    # build, keeping its source. Tests are left out.
    compiled = WHEELS / "pyc"
    compiled.mkdir(exist_ok=True)
    jobs = [(w, compiled / w.name, False) for w in wheels if not (compiled / w.name).exists()]
    package = build_package_wheel(WHEELS / "pkg")
    jobs.append((package, pyo / package.name, True))
    py_compile(jobs)
    packages = []
    for whl in [*wheels, package]:
        shipped = pyo / whl.name
        if whl is not package:
            shutil.copy2(compiled / whl.name, shipped)
        dist, version = whl.name.split("-")[:2]
        name = norm(dist)
        entry = lock["packages"].get(name, {})
        entry.update(
            name=name,
            version=version,
            file_name=whl.name,
            install_dir="site",
            sha256=sha256(shipped),
            package_type="package",
            imports=entry.get("imports") or _top_level(whl),
            depends=[d for d in entry.get("depends", []) if d in lock["packages"]],
            unvendored_tests=False,
            shared_library=False,
        )
        lock["packages"][name] = entry
        packages.append(name)
    lock_text = json.dumps(lock)
    (pyo / "pyodide-lock.json").write_text(lock_text)
    size = sum(f.stat().st_size for f in pyo.iterdir() if f.is_file())
    imports = sorted({i for n in packages for i in lock["packages"][n]["imports"]})
    lazy = {top: lock["packages"][n]["file_name"] for n in ZIPIMPORT for top in lock["packages"][n]["imports"]}
    manifest = {
        "wheels": [lock["packages"][n]["file_name"] for n in packages if n not in ZIPIMPORT],
        # names this build's runtime (the lock holds every shipped wheel's sha256) and the worker that starts it:
        # a reader's browser keeps a memory snapshot of the started runtime under it, and never restores one
        # from another build
        "build": hashlib.sha256(lock_text.encode() + WORKER.read_bytes()).hexdigest()[:16],
        "lazy": lazy,
        "sympy_version": lock["packages"]["sympy"]["version"],
        "imports": imports,
        "bytes": size,
        "bytes_at_start": size - sum((pyo / f).stat().st_size for f in set(lazy.values())),
    }
    (OUT / "live.json").write_text(json.dumps(manifest, indent=1))
    stamp.write_text(digest)
    print(f"built the live runtime {OUT} in {time.time() - t0:.0f} s: {size / 1e6:.1f} MB, {len(packages)} wheels")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wheels", action="store_true", help="only download the wheels")
    args = ap.parse_args()
    if not PYODIDE_NPM.exists():
        sys.exit("node_modules/pyodide is missing: run scripts/vendor_js.sh (npm ci)")
    download_wheels()
    if not args.wheels:
        build_site()


if __name__ == "__main__":
    main()
