/* The live calculators' Python (see _ext/live_calculators.py and llmcourse/_live.py): a module Web Worker
   that starts Pyodide from the book's own copy (lite/pyodide/), loads the wheels lite/live.json names, connects
   ipywidgets to the page through llmcourse._live, then runs the cells the page sends and hands it every widget
   message. Messages are handled one at a time, in order, as a kernel would.

   page -> worker: {type: "init", lite}            lite: the URL of the book's lite/ folder
                   {type: "run", run, code}        run a cell (a fresh namespace); its display goes to `run`
                   {type: "comm", text, buffers}   a widget message from the page (JSON text)
   worker -> page: {type: "step", name, secs}      a start-up step done (shown while starting; measured)
                   {type: "ready"} | {type: "fatal", error}
                   {type: "py", text, buffers}     a widget or display message from Python (JSON text)
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
  const t0 = performance.now();
  let t = t0;
  const step = (name) => {
    const now = performance.now();
    self.postMessage({ type: "step", name, secs: (now - t) / 1000, total: (now - t0) / 1000 });
    t = now;
  };
  const index = new URL("pyodide/", lite).href;
  const manifest = fetch(new URL("live.json", lite)).then((r) => r.json());
  const { loadPyodide } = await import(index + "pyodide.mjs");
  const { packages, zipimport } = await manifest;
  // Wheels imported as zip archives (sympy, mpmath): fetched while the runtime starts, put on sys.path as they are.
  const zips = zipimport.map((name) => fetch(index + name).then((r) => r.arrayBuffer()).then((b) => [name, b]));
  // The other wheels download while the runtime starts, and are unpacked (Pyodide's `packages` option).
  const py = await loadPyodide({ indexURL: index, packages, env: { HOME: "/home/pyodide" } });
  py.FS.mkdirTree("/lib/live");
  for (const [name, bytes] of await Promise.all(zips)) {
    py.FS.writeFile("/lib/live/" + name, new Uint8Array(bytes));
    py.runPython(`import sys; sys.path.insert(0, "/lib/live/${name}")`);
  }
  step("Python (Pyodide) and the packages");
  py.pyimport("llmcourse");
  step("llmcourse (sympy, pint)");
  live = py.pyimport("llmcourse._live");
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
      self.postMessage({ type: "idle", msg_id: JSON.parse(msg.text).msg_id, ms: performance.now() - t0 });
      return undefined;
    }
    default:
      return undefined;
  }
}

self.onmessage = (ev) => {
  queue = queue.then(() => handle(ev.data));
};
