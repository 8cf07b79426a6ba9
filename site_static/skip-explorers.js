// A link to skip past each explorer. An explorer holds dozens of controls (every entry of
// its matrices): a keyboard reader had to Tab through all of them to reach the text below.
// Before each explorer goes a link, "Skip past this explorer", that moves the focus to
// what follows it. It is hidden until it has the focus and then shown over the explorer's
// top edge, so adding it moves nothing on the page (site_static/skip-explorers.css).
(function () {
  var EXPLORERS = ".attn-explorer, .attn-graph-explorer, .conv-explorer";
  var count = 0;

  function addSkipLink(area) {
    if (area.dataset.attnSkip) return;
    area.dataset.attnSkip = "1";
    count += 1;
    var target = document.createElement("span");
    target.id = "attn-after-explorer-" + count;
    target.className = "attn-skip-target";
    target.tabIndex = -1; // focusable by the link, not a Tab stop
    area.parentElement.append(target); // after the view's tag, which the page keeps next to it
    var link = document.createElement("a");
    link.className = "attn-skip-link";
    link.href = "#" + target.id;
    link.textContent = "Skip past this explorer";
    link.addEventListener("click", function (event) {
      event.preventDefault();
      target.focus({ preventScroll: false });
    });
    area.before(link);
  }

  function scan() {
    document.querySelectorAll(".widget-subarea").forEach(function (area) {
      if (area.querySelector(EXPLORERS)) addSkipLink(area);
    });
  }

  // Views are drawn as the parser passes them; one drawn later (the host's fallback)
  // gets its link when it appears. Watching stops once every view is drawn.
  function drawnAll() {
    var views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]');
    return document.querySelectorAll(".widget-subarea").length >= views.length;
  }

  document.addEventListener("DOMContentLoaded", function () {
    scan();
    if (drawnAll()) return;
    var watching = new MutationObserver(function () {
      scan();
      if (drawnAll()) watching.disconnect();
    });
    watching.observe(document.body, { childList: true, subtree: true });
  });
})();
