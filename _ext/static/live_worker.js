/* The live calculators' Python (see _ext/live_calculators.py and llmcourse/_live.py): a module Web Worker
   that starts Pyodide from the book's own copy (lite/pyodide/), loads the wheels lite/live.json names, connects
   ipywidgets to the page through llmcourse._live, then runs the cells the page sends and hands it every widget
   message. Messages are handled one at a time, in order, as a kernel would.

   page -> worker: {type: "init", lite}            lite: the URL of the book's lite/ folder
                   {type: "run", run, code, store} run a cell (a fresh namespace); its display goes to `run`;
                                                   store: the page's kept entries (JSON text, llmcourse.page_store)
                   {type: "comm", text, msg_id, buffers}   a widget message from the page (JSON text; its id)
   worker -> page: {type: "step", name, secs}      a start-up step done (shown while starting; measured)
                   {type: "ready"} | {type: "fatal", error}
                   {type: "kept", bytes}           a snapshot of the started runtime is kept for other pages
                   {type: "warning", text}         a kept snapshot was not used (damaged, or failed to restore)
                   {type: "py", text, buffers}     a widget, display, error or store message from Python (JSON)
                   {type: "idle", msg_id, ms}      the page's message `msg_id` has been handled, in `ms`
                   {type: "batch", items}          the "py" messages sent while a page's message was handled,
                                                   then its "idle": one postMessage, applied in one task
                   {type: "done", run, error}      the cell has run (error: its traceback, or null) */
let live = null;
let queue = Promise.resolve();
let saved = null;  // the snapshot taken at this start, to be kept for the next page (see keepSnapshot)

// A started runtime is kept in the browser's Cache Storage as a Pyodide memory snapshot: the Python heap once
// the packages are imported and the widgets set up, before anything refers to a JavaScript object (a snapshot
// cannot hold one). Another page of the book restores it instead of starting Python and importing again. It is
// made in the reader's own browser (nothing extra to download) and kept under the build's name (live.json's
// "build": a digest of the runtime, the wheels and this worker), so a rebuilt book never restores an old one.
// Where there is no Cache Storage (a page that is not in a secure context: plain http other than localhost) or a
// restore fails, the runtime starts as usual.
const CACHE = "llmcourse-live";

async function openCache() {
  try {
    return self.caches ? await caches.open(CACHE) : null;
  } catch {
    return null;  // storage refused (some private modes): no snapshot is taken either
  }
}

/** Tells the page (which logs it, and keeps it for tests) something the reader need not act on. */
const warn = (text) => self.postMessage({ type: "warning", text });

const sha256 = async (bytes) =>
  Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)), (b) => b.toString(16).padStart(2, "0")).join("");

/** The kept snapshot, if there is one and its bytes are those kept (a damaged one could hang the restore). */
async function cachedSnapshot(cache, key) {
  try {
    const hit = cache && (await cache.match(key));
    if (!hit) return null;
    const snapshot = new Uint8Array(await hit.arrayBuffer());
    if ((await sha256(snapshot)) === hit.headers.get("X-Snapshot-SHA256")) return snapshot;
    warn("this browser's snapshot of the runtime is damaged: starting afresh");
    await cache.delete(key);
  } catch {
    // unreadable: started afresh
  }
  return null;
}

async function keepSnapshot(cache, key, snapshot) {
  for (const old of await cache.keys()) if (old.url !== key) await cache.delete(old);  // other builds'
  const headers = { "Content-Type": "application/octet-stream", "X-Snapshot-SHA256": await sha256(snapshot) };
  await cache.put(key, new Response(snapshot, { headers }));
}

async function unpack(py, files) {
  const site = py.runPython("import sysconfig; sysconfig.get_paths()['purelib']");
  for (const f of files) py.unpackArchive(await f, "whl", { extractDir: site });
}

/** Python restored from `snapshot`, its wheels unpacked again (a snapshot holds the heap, not the files):
    [pyodide, llmcourse._live]. Throws if anything in it fails. */
async function restore(loadPyodide, index, options, snapshot, files) {
  const create = (await import(index + "pyodide.asm.mjs")).default;
  const size = snapshot.length;
  const py = await loadPyodide({
    ...options,
    _loadSnapshot: snapshot,
    // The runtime's memory is the module's own, sized for a fresh start: grown to hold the snapshot.
    createPyodideModule: async (settings) => {
      const module = await create(settings);
      if (module.HEAP8.length < size) module._emscripten_resize_heap(size);
      return module;
    },
  });
  await unpack(py, files);
  const live = py.pyimport("llmcourse._live");
  py.runPython("import random; random.seed()");  // not the random state of the page that took the snapshot
  return [py, live];
}

// The messages Python sends while it handles one of the page's (a reader's change): sent to the page together,
// with the "idle" that ends them, in one postMessage. The page then applies a recompute's changes (the result
// table, a chart, the control's echo) in one task, so they are drawn in one frame, not one frame each.
let batch = null;

function post(text, buffers) {
  const bufs = buffers.toJs();  // a Python list of bytes -> Uint8Array copies
  buffers.destroy();
  const msg = { type: "py", text, buffers: bufs };
  if (batch) batch.push(msg);
  else self.postMessage(msg, bufs.map((b) => b.buffer));
}

async function init(lite) {
  let t = performance.now();
  const step = (name) => {
    const now = performance.now();
    self.postMessage({ type: "step", name, secs: (now - t) / 1000 });
    t = now;
  };
  const index = new URL("pyodide/", lite).href;
  const manifest = fetch(new URL("live.json", lite)).then((r) => {
    if (!r.ok) throw new Error(`the live runtime is missing (${r.url}: HTTP ${r.status}): build it with make lite`);
    return r.json();
  });
  manifest.catch(() => {});  // awaited below (after the runtime's import): not an unhandled rejection meanwhile
  const { loadPyodide } = await import(index + "pyodide.mjs");
  const { wheels, lazy, build, sympy_version: sympyVersion } = await manifest;
  // The wheels download while the runtime starts; they are unpacked into site-packages once it has.
  const files = wheels.map((name) =>
    fetch(index + name).then((r) => {
      if (!r.ok) throw new Error(`${r.url}: HTTP ${r.status}`);
      return r.arrayBuffer();
    }),
  );
  files.forEach((f) => f.catch(() => {}));  // awaited below
  const key = new URL(`snapshot/${build}`, lite).href;
  const options = { indexURL: index, env: { HOME: "/home/pyodide", LLMCOURSE_SYMPY_VERSION: sympyVersion } };
  const cache = await openCache();
  const snapshot = await cachedSnapshot(cache, key);
  let py = null;
  if (snapshot) {
    try {
      [py, live] = await restore(loadPyodide, index, options, snapshot, files);
      step("Python and the packages, restored from this browser's snapshot");
    } catch (e) {
      warn(`this browser's snapshot of the runtime could not be restored (${e}): starting afresh`);
      cache.delete(key).catch(() => {});
    }
    snapshot.buffer.transfer?.(0);  // its copy is in the runtime's memory now (Pyodide's options still refer to it)
  }
  if (py === null) {
    py = await loadPyodide({ ...options, _makeSnapshot: cache !== null });
    await unpack(py, files);
    // llmcourse._live by its path, so that its finder can be put in place before the package is imported.
    live = py.runPython(`
import importlib.util, sys, sysconfig
spec = importlib.util.spec_from_file_location("llmcourse._live", sysconfig.get_paths()["purelib"] + "/llmcourse/_live.py")
module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
module`);
    step("Python (Pyodide) and the packages");
    py.pyimport("llmcourse");
    step("llmcourse (pint)");
    live.install(null);
    step("ipywidgets");
    if (cache !== null) {
      try {
        saved = { cache, key, snapshot: py.makeMemorySnapshot() };
        step("a snapshot for other pages");
      } catch (e) {
        console.warn("live: no snapshot of the runtime for other pages", e);
      }
    }
  }
  // SymPy and mpmath are fetched only if something imports them (llmcourse._live.LazyWheels): a synchronous
  // request, which a worker may make, and the wheel goes on sys.path as a zip archive.
  py.FS.mkdirTree("/lib/live");
  const fetchWheel = (name) => {
    const xhr = new XMLHttpRequest();
    xhr.open("GET", index + name, false);
    xhr.responseType = "arraybuffer";
    xhr.send();
    if (xhr.status !== 200) throw new Error(`${name}: HTTP ${xhr.status}`);
    py.FS.writeFile("/lib/live/" + name, new Uint8Array(xhr.response));
    return "/lib/live/" + name;
  };
  py.pyimport("sys").meta_path.insert(0, live.LazyWheels(fetchWheel, py.toPy(lazy)));
  live.connect(post);
}

function handle(msg) {
  switch (msg.type) {
    case "init":
      return init(msg.lite).then(
        () => {
          self.postMessage({ type: "ready" });
          if (saved) {
            // kept after "ready" (the reader does not wait for it); the page is told, for measurements
            const { cache, key, snapshot } = saved;
            saved = null;
            keepSnapshot(cache, key, snapshot).then(
              () => self.postMessage({ type: "kept", bytes: snapshot.length }),
              (e) => console.warn("live: the runtime's snapshot could not be kept", e),
            );
          }
        },
        (e) => self.postMessage({ type: "fatal", error: String(e && e.stack ? e.stack : e) }),
      );
    case "run": {
      let error = null;
      try {
        error = live.run(msg.code, msg.run, msg.store ?? null) ?? null;
      } catch (e) {
        error = String(e);
      }
      self.postMessage({ type: "done", run: msg.run, error });
      return undefined;
    }
    case "comm": {
      const t0 = performance.now();
      batch = [];
      try {
        live.receive(msg.text, msg.buffers || []);
      } catch (e) {
        console.error(e);
      }
      const items = batch;
      batch = null;
      // ms: how long Python took to handle it (the page keeps the figures, for measurements)
      items.push({ type: "idle", msg_id: msg.msg_id, ms: performance.now() - t0 });
      const transfer = items.flatMap((m) => (m.buffers || []).map((b) => b.buffer));
      self.postMessage({ type: "batch", items }, transfer);
      return undefined;
    }
    default:
      return undefined;
  }
}

self.onmessage = (ev) => {
  queue = queue.then(() => handle(ev.data)).catch((e) => console.error("live worker:", e));
};
