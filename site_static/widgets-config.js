// Make the widget manager (html-manager) load everything from this site, never a CDN.
// Sphinx writes the relative path from the current page to the site root into
// <html data-content_root="...">.
(function () {
  var root = document.documentElement.dataset.content_root || "./";

  require.config({
    paths: {
      // anywidget's AMD module, copied from the anywidget wheel at build time.
      anywidget: root + "_static/vendor/anywidget/index",
      // html-manager derives the address of its fonts from this module id.
      "@jupyter-widgets/html-manager/dist": root + "_static/vendor/html-manager",
    },
  });

  // html-manager 1.0 typesets widget labels with the MathJax 2 call
  // MathJax.Hub.Queue(["Typeset", MathJax.Hub, element]) (ipywidgets issue 3829);
  // the site runs MathJax 3. Provide that one call, forwarded to MathJax 3, on whatever
  // object ends up as window.MathJax (the config object first, MathJax itself later).
  var hub = {
    Queue: function (command) {
      var element = command && command[2];
      var mathjax = window.MathJax;
      if (element && mathjax && mathjax.typesetPromise) {
        mathjax.typesetPromise([element]).catch(function () {});
      }
    },
  };
  var current = window.MathJax;
  Object.defineProperty(window, "MathJax", {
    configurable: true,
    get: function () { return current; },
    set: function (value) {
      current = value;
      if (value && typeof value === "object" && !value.Hub) value.Hub = hub;
    },
  });
  window.MathJax = current;
})();
