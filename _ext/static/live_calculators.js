/* Live calculators (see _ext/live_calculators.py): the "Run live" button swaps a calculator's build-time
   snapshot for a JupyterLite REPL that runs the same cell with the real llmcourse package under Pyodide,
   in this page, with no server. The status line says "starting" until the live widget is there. */
(function () {
  "use strict";

  // The Jupyter widgets HTML manager still calls MathJax 2's MathJax.Hub.Queue; the book loads MathJax 3.
  const pending = [];
  function typeset(el) {
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

  function setStatus(root, state, text) {
    root.dataset.state = state;
    root.querySelector(".llmcourse-live-status").textContent = text;
  }

  function start(root) {
    const cell = root.closest(".llmcourse-live-cell");
    const button = root.querySelector(".llmcourse-live-run");
    button.disabled = true;
    const t0 = performance.now();
    const params = new URLSearchParams({ kernel: "python", toolbar: "1", showBanner: "0" });
    params.append("code", JSON.parse(root.dataset.code));
    const frame = document.createElement("iframe");
    frame.className = "llmcourse-live-frame";
    frame.title = "Live calculator (Python running in your browser)";
    frame.src = root.dataset.repl + "?" + params.toString();
    const snapshot = cell.querySelector(".llmcourse-snapshot");
    if (snapshot) {
      snapshot.before(frame);  // the live calculator takes the snapshot's place
      snapshot.hidden = true;
    } else {
      root.after(frame);
    }
    // The package's widgets carry a note for the static page ("... is a snapshot ..."): hide it when live.
    const note = root.dataset.note;
    const hideNote = (doc) => {
      if (!note) return;
      doc.querySelectorAll(".jp-CodeConsole .widget-html").forEach((el) => {
        if (el.textContent.trim() === note) el.style.display = "none";
      });
    };
    frame.addEventListener("load", () => {
      try {
        new MutationObserver(() => hideNote(frame.contentDocument))
          .observe(frame.contentDocument.body, { childList: true, subtree: true });
      } catch (e) { /* not same-origin */ }
    });
    setStatus(root, "starting", "Starting Python in your browser (Pyodide, sympy, pint, llmcourse)\u2026 " +
      "the calculator appears here when it is ready.");
    const timer = setInterval(() => {
      let doc = null;
      try { doc = frame.contentDocument; } catch (e) { /* not same-origin: cannot watch */ }
      if (!doc) return;
      const secs = ((performance.now() - t0) / 1000).toFixed(0);
      if (doc.querySelector(".jp-CodeConsole .jupyter-widgets .llmcourse-result, .jp-CodeConsole .widget-vbox")) {
        clearInterval(timer);
        root.dataset.readyMs = String(Math.round(performance.now() - t0));
        setStatus(root, "live", `Live: computed in your browser by the llmcourse package (ready after ${secs} s). ` +
          "Change an input to recompute.");
        button.textContent = "\u25CF Live";
      } else if (doc.querySelector('.jp-CodeConsole [data-mime-type="application/vnd.jupyter.stderr"]')) {
        clearInterval(timer);
        setStatus(root, "error", "The live calculator failed to start: see the error below.");
      } else {
        setStatus(root, "starting", `Starting Python in your browser (Pyodide, sympy, pint, llmcourse)\u2026 ${secs} s`);
      }
    }, 250);
  }

  document.addEventListener("click", (ev) => {
    const button = ev.target.closest && ev.target.closest(".llmcourse-live-run");
    if (button && !button.disabled) start(button.closest(".llmcourse-live"));
  });
})();
