/* The live calculators' Python (see _ext/live_calculators.py and llmcourse/_live.py): a module Web Worker
   that starts Pyodide from the book's own copy (lite/pyodide/), loads the wheels lite/live.json names, connects
   ipywidgets to the page through llmcourse._live, then runs the cells the page sends and hands it every widget
   message. Messages are handled one at a time, in order, as a kernel would.

   page -> worker: {type: "init", lite}            lite: the URL of the book's lite/ folder
                   {type: "run", run, code}        run a cell (a fresh namespace); its display goes to `run`
                   {type: "comm", text, msg_id, buffers}   a widget message from the page (JSON text; its id)
   worker -> page: {type: "step", name, secs}      a start-up step done (shown while starting; measured)
                   {type: "ready"} | {type: "fatal", error}
                   {type: "py", text, buffers}     a widget, display or error message from Python (JSON text)
                   {type: "idle", msg_id, ms}      the page's message `msg_id` has been handled, in `ms`
                   {type: "done", run, error}      the cell has run (error: its traceback, or null) */
let live = null;
let queue = Promise.resolve();

function post(text, buffers) {
  const bufs = buffers.toJs();  // a Python list of bytes -> Uint8Array copies
  buffers.destroy();
  self.postMessage({ type: "py", text, buffers: bufs }, bufs.map((b) => b.buffer));
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
  const { packages, lazy, sympy_version: sympyVersion } = await manifest;
  // The wheels download while the runtime starts, and are unpacked (Pyodide's `packages` option).
  const py = await loadPyodide({
    indexURL: index, packages, env: { HOME: "/home/pyodide", LLMCOURSE_SYMPY_VERSION: sympyVersion },
  });
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
  // llmcourse._live by its path, so that its finder is in place before the package is imported.
  live = py.runPython(`
import importlib.util, sys, sysconfig
spec = importlib.util.spec_from_file_location("llmcourse._live", sysconfig.get_paths()["purelib"] + "/llmcourse/_live.py")
module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
module`);
  py.pyimport("sys").meta_path.insert(0, live.LazyWheels(fetchWheel, py.toPy(lazy)));
  step("Python (Pyodide) and the packages");
  py.pyimport("llmcourse");
  step("llmcourse (pint)");
  live.install(post);
  step("ipywidgets");
}

function handle(msg) {
  switch (msg.type) {
    case "init":
      return init(msg.lite).then(
        () => self.postMessage({ type: "ready" }),
        (e) => self.postMessage({ type: "fatal", error: String(e && e.stack ? e.stack : e) }),
      );
    case "run": {
      let error = null;
      try {
        error = live.run(msg.code, msg.run) ?? null;
      } catch (e) {
        error = String(e);
      }
      self.postMessage({ type: "done", run: msg.run, error });
      return undefined;
    }
    case "comm": {
      const t0 = performance.now();
      try {
        live.receive(msg.text, msg.buffers || []);
      } catch (e) {
        console.error(e);
      }
      // ms: how long Python took to handle it (the page keeps the figures, for measurements)
      self.postMessage({ type: "idle", msg_id: msg.msg_id, ms: performance.now() - t0 });
      return undefined;
    }
    default:
      return undefined;
  }
}

self.onmessage = (ev) => {
  queue = queue.then(() => handle(ev.data)).catch((e) => console.error("live worker:", e));
};
