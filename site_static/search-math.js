// Search results quote each page around the words found. Sphinx reads that text from the
// page's HTML as served: a formula there is KaTeX's rendering (rendered when the site was
// built), whose text repeats every symbol and holds the TeX source in its MathML
// annotation. On the search page (the only one with Sphinx's `Search`), formulas are
// quoted as plain text instead: the TeX without its delimiters and markup, the usual
// symbols written as characters ("√d").
(function () {
  var SYMBOLS = {
    cdot: "·", times: "×", le: "≤", leq: "≤", ge: "≥", geq: "≥", neq: "≠", ne: "≠",
    approx: "≈", to: "→", rightarrow: "→", leftarrow: "←", in: "∈", sum: "Σ", prod: "Π",
    infty: "∞", ldots: "…", dots: "…", cdots: "⋯", top: "ᵀ", pm: "±", mid: "|",
    alpha: "α", beta: "β", gamma: "γ", delta: "δ", epsilon: "ε", varepsilon: "ε",
    theta: "θ", lambda: "λ", mu: "μ", pi: "π", sigma: "σ", tau: "τ", phi: "φ", psi: "ψ",
    omega: "ω", Delta: "Δ", Sigma: "Σ", Lambda: "Λ", Omega: "Ω",
    quad: " ", qquad: " ", left: "", right: "", big: "", Big: "",
  };
  var BLACKBOARD = { R: "ℝ", N: "ℕ", Z: "ℤ", C: "ℂ" };
  var GROUP = "\\{([^{}]*)\\}"; // one brace group holding no other

  function texToText(tex) {
    var text = tex.trim().replace(/^(\\\(|\\\[|\$\$)|(\\\)|\\\]|\$\$)$/g, "");
    text = text.replace(/\\[,;:!]/g, " ");
    // Innermost groups first, until no command with an argument is left.
    var before;
    do {
      before = text;
      text = text
        .replace(new RegExp("\\\\frac" + GROUP + GROUP, "g"), function (_, a, b) {
          return wrap(a) + "/" + wrap(b);
        })
        .replace(new RegExp("\\\\sqrt" + GROUP, "g"), function (_, a) { return "√" + wrap(a); })
        .replace(new RegExp("\\\\mathbb" + GROUP, "g"), function (_, a) {
          return BLACKBOARD[a] || a;
        })
        .replace(new RegExp("\\\\(?!frac|sqrt|mathbb)[A-Za-z]+" + GROUP, "g"), function (_, a) {
          return a; // \text, \mathrm, \operatorname, \mathbf...: the argument as it is
        })
        .replace(/\^(\{\\top\}|\\top|\{T\}|T(?![A-Za-z]))/g, "ᵀ")
        .replace(new RegExp("\\^" + GROUP, "g"), function (_, a) { return "^" + wrap(a); })
        .replace(new RegExp("_" + GROUP, "g"), "_$1");
    } while (text !== before);
    text = text.replace(/\\([A-Za-z]+)/g, function (_, name) {
      return name in SYMBOLS ? SYMBOLS[name] : name; // \exp, \log, \max: their names
    });
    return text.replace(/[{}]/g, "").replace(/\s+/g, " ").trim();
  }

  // Brackets around an argument (of a fraction, a root, a power) of more than one name.
  function wrap(part) {
    return /^√?[\w.ᵀ]+$/.test(part) ? part : "(" + part + ")";
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (typeof Search === "undefined") return;
    var htmlToText = Search.htmlToText;
    Search.htmlToText = function (htmlString, anchor) {
      var page = new DOMParser().parseFromString(htmlString, "text/html");
      page.querySelectorAll(".math").forEach(function (formula) {
        var tex = formula.querySelector('annotation[encoding="application/x-tex"]');
        formula.textContent = texToText((tex || formula).textContent);
      });
      return htmlToText(page.documentElement.outerHTML, anchor);
    };
  });
})();
