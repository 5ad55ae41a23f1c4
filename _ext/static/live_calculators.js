/* Live calculators (see _ext/live_calculators.py): "Run live" swaps a calculator's build-time snapshot for the
   same cell run by the real llmcourse package under Pyodide, in a Web Worker of this page (live_worker.js),
   with no server and no Jupyter kernel. The page draws the widgets with the same Jupyter widgets HTML manager
   that draws the snapshots, and talks to Python in the widgets' own messages (llmcourse/_live.py). One Python
   serves every calculator of a page; each cell runs in a fresh namespace. The status line says "starting"
   until the live widget is there, then "live". */
(function () {
  "use strict";

  // The Jupyter widgets HTML manager still calls MathJax 2's MathJax.Hub.Queue; the book loads MathJax 3.
  const pending = [];
  // MathJax 3's delimiters (the book sets no others): $$...$$, \(...\), \[...\]
  const hasMath = (el) => !el || /\$\$|\\\(|\\\[/.test(el.textContent);
  function typeset(el) {
    if (!hasMath(el)) return;  // a widget's HTML with no equation (most updates): nothing to typeset
    const MJ = window.MathJax;
    if (MJ && MJ.typesetPromise) MJ.typesetPromise(el ? [el] : undefined).catch(() => {});
    else pending.push(el);
  }
  function shimMathJax2() {
    const MJ = window.MathJax;
    if (!MJ || MJ.Hub) return;
    MJ.Hub = {
      Queue: (...jobs) => jobs.forEach((j) => Array.isArray(j) && j[0] === "Typeset" && typeset(j[2])),
      Config: () => {}, Register: { StartupHook: () => {} },
    };
  }
  window.MathJax = window.MathJax || {};
  shimMathJax2();
  const shimTimer = setInterval(() => {
    shimMathJax2();
    if (window.MathJax && window.MathJax.typesetPromise) {
      clearInterval(shimTimer);
      pending.splice(0).forEach(typeset);
    }
  }, 50);
  setTimeout(() => clearInterval(shimTimer), 60000);

  const WIDGET_MIME = "application/vnd.jupyter.widget-view+json";
  const contentRoot = () => new URL(document.documentElement.dataset.content_root || "./", document.baseURI);
  let python = null;  // the page's one live Python: a promise of {worker, manager}, made on the first "Run live"
  const steps = [];  // [name, seconds] of its start, for the status line and for measurements
  const pythonMs = [];  // how long Python took to handle each of the page's messages (for measurements)
  const snapshot = { bytes: 0 };  // the size of the runtime's snapshot, once kept for other pages (measurements)
  const warnings = [];  // the worker's warnings (a kept snapshot not used), also logged (for tests)
  const runs = new Map();  // run id -> {el, views: [promises], resolve}
  const comms = new Map();  // comm id -> LiveComm
  const callbacks = new Map();  // id of a page message -> the widget manager's callbacks for it
  const sentBy = new Map();  // id of a page message -> the comm that sent it (an error it causes is shown there)
  const areas = new Map();  // comm id -> the live area of the cell that made it
  const listeners = [];  // onStep functions of the "Run live" buttons waiting for the start
  let nextId = 0;

  const uid = () => `live-${Date.now().toString(36)}-${(nextId++).toString(36)}`;
  const asBytes = (b) => new Uint8Array(b instanceof ArrayBuffer ? b.slice(0) : b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));

  /** A widget's comm on the page side (the manager's IClassicComm): its messages go to the worker. */
  class LiveComm {
    constructor(worker, commId, targetName) {
      this.worker = worker;
      this.comm_id = commId;
      this.target_name = targetName;
      this.onMsg = null;
      this.onClose = null;
    }
    open() { return ""; }  // opened by Python: already open
    send(data, cbs, metadata, buffers) { return this._post("comm_msg", data, cbs, buffers); }
    close(data, cbs, metadata, buffers) {
      comms.delete(this.comm_id);
      areas.delete(this.comm_id);
      return this._post("comm_close", data, cbs, buffers);
    }
    on_msg(cb) { this.onMsg = cb; }
    on_close(cb) { this.onClose = cb; }
    _post(msgType, data, cbs, buffers) {
      const msgId = uid();
      if (cbs) callbacks.set(msgId, cbs);
      sentBy.set(msgId, this.comm_id);
      const bufs = (buffers || []).map(asBytes);
      const text = JSON.stringify({ msg_type: msgType, msg_id: msgId, comm_id: this.comm_id, data: data || {} });
      this.worker.postMessage({ type: "comm", text, msg_id: msgId, buffers: bufs }, bufs.map((b) => b.buffer));
      return msgId;
    }
  }

  // What the reader's practice keeps between visits (llmcourse/page_store.py): the page's localStorage entries whose
  // key starts with STORE_PREFIX, handed to Python with each cell it runs; Python hands back each change (a "store"
  // message). Storage the browser refuses (a private mode, a full quota) is not an error: the practice then lasts
  // as long as the page.
  const STORE_PREFIX = "llmcourse:";
  function readStore() {
    const out = {};
    try {
      for (let i = 0; i < localStorage.length; i++) {
        const key = localStorage.key(i);
        if (key && key.startsWith(STORE_PREFIX)) out[key] = localStorage.getItem(key);
      }
    } catch (e) {
      console.warn("live calculator: this browser keeps nothing for the page:", e.message);
    }
    return JSON.stringify(out);
  }
  function writeStore(key, value) {
    if (typeof key !== "string" || !key.startsWith(STORE_PREFIX) || typeof value !== "string") return;
    try {
      localStorage.setItem(key, value);
    } catch (e) {
      console.warn("live calculator: this browser keeps nothing for the page:", e.message);
    }
  }

  function showError(el, text) {
    let pre = el.querySelector(":scope > .llmcourse-live-error");
    if (!pre) {
      pre = document.createElement("pre");
      pre.className = "llmcourse-live-error";
      el.appendChild(pre);
    }
    pre.textContent = text;
  }

  /** Handle one message from Python; a promise when the next must wait for it (a model being made). */
  function fromPython(worker, manager, text, buffers) {
    const msg = JSON.parse(text);
    const kernelMsg = {
      header: { msg_type: msg.msg_type }, parent_header: msg.parent_header || {}, metadata: msg.metadata || {},
      content: { comm_id: msg.comm_id, target_name: msg.target_name, data: msg.data }, buffers: buffers || [],
    };
    if (msg.msg_type === "comm_open") {
      const comm = new LiveComm(worker, msg.comm_id, msg.target_name);
      comms.set(msg.comm_id, comm);
      const parent = areas.get(sentBy.get((msg.parent_header || {}).msg_id));
      areas.set(msg.comm_id, runs.has(msg.run) ? runs.get(msg.run).el : parent);  // the cell's, or its parent's
      return manager.handle_comm_open(comm, kernelMsg).catch((e) => console.error("live calculator:", e));
    } else if (msg.msg_type === "comm_msg") {
      const comm = comms.get(msg.comm_id);
      if (comm && comm.onMsg) comm.onMsg(kernelMsg);
    } else if (msg.msg_type === "comm_close") {
      const comm = comms.get(msg.comm_id);
      comms.delete(msg.comm_id);
      areas.delete(msg.comm_id);
      if (comm && comm.onClose) comm.onClose(kernelMsg);
    } else if (msg.msg_type === "store") {  // the reader's practice, kept for the next visit
      writeStore(msg.key, msg.value);
    } else if (msg.msg_type === "error") {  // an exception in a widget's callback: shown by the calculator
      const el = areas.get(sentBy.get((msg.parent_header || {}).msg_id));
      console.error("live calculator:", msg.text);
      if (el) showError(el, msg.text);
    } else if (msg.msg_type === "display") {
      const run = runs.get(msg.run);
      if (!run) return;
      const box = document.createElement("div");
      box.className = "llmcourse-live-display";
      run.el.appendChild(box);
      const view = msg.data[WIDGET_MIME];
      if (view) {
        run.views.push(manager.get_model(view.model_id)
          .then((model) => manager.display_view(manager.create_view(model), box)));
        return undefined;
      } else {
        const pre = document.createElement("pre");
        pre.textContent = msg.data["text/plain"] || "";
        box.appendChild(pre);
      }
    }
    return undefined;
  }

  /** The page's live Python, started once (on the first "Run live"); `onStep(name)` at each step of its start. A start
      that failed is forgotten, so that "Run live" can try again. */
  function startPython(onStep) {
    if (onStep) listeners.push(onStep);
    if (python) return python;
    const lite = new URL("lite/", contentRoot()).href;
    const manager = new Promise((resolve, reject) => {
      if (!window.require) throw new Error("the page has no widget manager (RequireJS is missing)");
      window.require(["@jupyter-widgets/html-manager"], (hm) => resolve(new hm.HTMLManager()), reject);
    });
    python = new Promise((resolve, reject) => {
      if (location.protocol === "file:") {
        throw new Error("a live calculator needs the book served over http: run `make serve` and open its address");
      }
      const worker = new Worker(new URL("_static/live_worker.js", contentRoot()), { type: "module" });
      worker.onerror = (e) => reject(new Error(e.message || "the live Python failed to start"));
      manager.catch(reject);
      // One message at a time, in order: a message waits for the model the one before it is making.
      let inbox = Promise.resolve();
      const handle = async (m) => {
        if (m.type === "step") {
          steps.push([m.name, m.secs]);
          listeners.forEach((f) => f(m.name));
        } else if (m.type === "ready") {
          resolve({ worker, manager: await manager });
        } else if (m.type === "kept") {
          snapshot.bytes = m.bytes;
        } else if (m.type === "warning") {
          warnings.push(m.text);
          console.warn("live calculator:", m.text);
        } else if (m.type === "fatal") {
          reject(new Error(m.error));
        } else if (m.type === "py") {
          await fromPython(worker, await manager, m.text, m.buffers);
        } else if (m.type === "idle") {
          pythonMs.push(m.ms);
          const cbs = callbacks.get(m.msg_id);
          callbacks.delete(m.msg_id);
          sentBy.delete(m.msg_id);
          const status = cbs && cbs.iopub && cbs.iopub.status;
          if (status) status({ header: { msg_type: "status" }, parent_header: { msg_id: m.msg_id },
            content: { execution_state: "idle" } });
        } else if (m.type === "batch") {  // a recompute's messages, applied in one task (one frame)
          for (const item of m.items) {
            // each on its own: one that fails must not keep the rest, and never the closing "idle" (without it the
            // widget manager would hold every later change of the calculator)
            try {
              await handle(item);
            } catch (e) {
              console.error("live calculator:", e);
            }
          }
        } else if (m.type === "done") {
          const run = runs.get(m.run);
          if (run) Promise.all(run.views).then(() => run.resolve(m.error), (e) => run.resolve(String(e)));
        }
      };
      worker.onmessage = (ev) => {
        inbox = inbox.then(() => handle(ev.data)).catch((e) => console.error("live calculator:", e));
      };
      worker.postMessage({ type: "init", lite });
    });
    python.catch(() => { python = null; listeners.length = 0; });
    return python;
  }

  /** Run a cell's code in the page's live Python and show what it displays in `el`. Resolves to null once its
      widgets are drawn, or to the error (a traceback) if it failed. */
  async function run(code, el, onStep) {
    const { worker } = await startPython(onStep);
    const id = nextId++;
    const done = new Promise((resolve) => runs.set(id, { el, views: [], resolve }));
    worker.postMessage({ type: "run", run: id, code, store: readStore() });
    const error = await done;
    runs.delete(id);
    if (error) showError(el, error);
    return error;
  }

  function setStatus(root, state, text) {
    root.dataset.state = state;
    root.querySelector(".llmcourse-live-status").textContent = text;
  }

  /** From the first live calculator on, the page's off-screen sections are not rendered (live_calculators.css), so
      that a recompute lays out and paints what is in view. Each section is given the height it has now (measured
      all at once: one layout), which it keeps while skipped, so the page does not move; measured again when the
      window's width changes (the text wraps anew). */
  let measuredWidth = null;
  const frame = () => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
  async function skipOffscreen() {
    const html = document.documentElement;
    const sections = [...document.querySelectorAll(".bd-article section > section")];
    const again = measuredWidth !== null;
    measuredWidth = window.innerWidth;
    html.classList.remove("llmcourse-live-on");
    html.classList.add("llmcourse-live-measure");  // contained as they will be, each rendered
    if (again) {
      // a section drawn before keeps the height it last had ("auto"), at the old width, over the one given: dropped
      // ("none" for a rendering update), so that the heights measured now are the ones a skipped section keeps
      sections.forEach((s) => { s.style.containIntrinsicSize = "none"; });
      await frame();
    }
    const heights = sections.map((s) => s.getBoundingClientRect().height);
    sections.forEach((s, i) => { s.style.containIntrinsicSize = `auto ${heights[i]}px`; });
    html.classList.replace("llmcourse-live-measure", "llmcourse-live-on");
    if (!again) {
      let timer = null;
      window.addEventListener("resize", () => {
        clearTimeout(timer);
        timer = setTimeout(() => { if (window.innerWidth !== measuredWidth) skipOffscreen(); }, 200);
      });
    }
  }

  function start(root) {
    const cell = root.closest(".llmcourse-live-cell");
    const button = root.querySelector(".llmcourse-live-run");
    button.disabled = true;
    const t0 = performance.now();
    const out = document.createElement("div");
    out.className = "llmcourse-live-output";
    const snapshot = cell.querySelector(".llmcourse-snapshot");
    if (snapshot) {
      snapshot.before(out);  // the live calculator takes the snapshot's place
      snapshot.hidden = true;
    } else {
      root.after(out);
    }
    const secs = () => ((performance.now() - t0) / 1000).toFixed(0);
    let doing = "loading Pyodide and the packages";
    const show = () => setStatus(root, "starting", `Starting Python in your browser (${doing})\u2026 ${secs()} s`);
    show();
    const timer = setInterval(show, 250);
    const names = { "Python (Pyodide) and the packages": "importing llmcourse",
      "llmcourse (pint)": "loading the widgets", ipywidgets: "running the calculator",
      "a snapshot for other pages": "running the calculator",
      "Python and the packages, restored from this browser's snapshot": "running the calculator" };
    run(JSON.parse(root.dataset.code), out, (name) => { doing = names[name] || doing; show(); })
      .then((error) => {
        clearInterval(timer);
        root.dataset.readyMs = String(Math.round(performance.now() - t0));
        if (error) {
          setStatus(root, "error", "The live calculator failed: see the error below.");
        } else {
          setStatus(root, "live", `Live: computed in your browser by the llmcourse package (ready after ${secs()} s). ` +
            "Change an input to recompute.");
          button.textContent = "\u25CF Live";
          if (measuredWidth === null) skipOffscreen();  // the first live calculator of the page (a failed start: not)
        }
      }, (e) => {  // it did not start: the snapshot comes back, and the button can try again
        clearInterval(timer);
        out.remove();
        if (snapshot) snapshot.hidden = false;
        button.disabled = false;
        setStatus(root, "error", `The live calculator failed to start: ${e.message}`);
      });
  }

  // For the book's browser tests and measurements: run more cells in this page's live Python.
  window.llmcourseLive = { run: (code, el) => run(code, el), steps, pythonMs, snapshot, warnings,
    manager: async () => (await python).manager };

  document.addEventListener("click", (ev) => {
    const button = ev.target.closest && ev.target.closest(".llmcourse-live-run");
    if (button && !button.disabled) start(button.closest(".llmcourse-live"));
  });
})();
