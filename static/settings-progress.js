// Settings pages: keep the "Recomputing expiry dates" box current without a reload.
// The page is complete without this script; it only saves pressing Refresh.
(function () {
  "use strict";
  var box = document.querySelector("[data-progress-url]");
  if (!box) { return; }
  var bar = box.querySelector("progress");
  var text = box.querySelector("[data-progress-text]");
  var hint = box.querySelector("[data-no-js-hint]");
  var heading = box.querySelector("h2");
  if (hint) { hint.hidden = true; }

  function show(run) {
    bar.max = Math.max(run.total, 1);
    bar.value = run.done;
    bar.textContent = run.done + " of " + run.total;
    if (!run.finished) {
      text.textContent = run.done + " of " + run.total + " facts checked so far.";
      return;
    }
    text.textContent = run.status === "superseded"
      ? "Stopped after " + run.done + " of " + run.total + " facts: a newer rule change took over."
      : "Finished: " + run.done + " of " + run.total + " facts checked.";
    if (heading) { heading.textContent = "Last recomputation of expiry dates"; }
  }

  function poll() {
    fetch(box.getAttribute("data-progress-url"), {
      credentials: "same-origin",
      headers: { "Accept": "application/json" }
    })
      .then(function (response) {
        if (!response.ok) { throw new Error(response.status); }
        return response.json();
      })
      .then(function (run) {
        show(run);
        if (!run.finished) { window.setTimeout(poll, 1000); }
      })
      .catch(function () {
        if (hint) { hint.hidden = false; }  // fall back to the Refresh link
      });
  }

  poll();
}());
