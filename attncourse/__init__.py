"""Helpers for the course "Attention, step by step".

Modules, one idea each:

* ``attncourse.attention``: numpy reference maths (softmax, scores, scaled dot-product
  attention, masks).
* ``attncourse.examples``: the seeds' toy sentences with hand-made, named embeddings.
* ``attncourse.reciprocity``: what symmetric similarity forces (row normalisers,
  repeated attention).
* ``attncourse.one_space``: gradient steps on embeddings for similarity attention (torch).
* ``attncourse.training``: a generated pronoun task; W_Q, W_K, W_V learned in torch
  (separate, or tied W_Q = W_K as a baseline).
* ``attncourse.graph``: attention as a graph (edges, message passing, stationary
  distribution, cycle ratios, rollout, stacked layers); figures in ``graph_figures``.
* ``attncourse.multihead``: multi-head attention (split and merge heads, W_O,
  grouped-query attention), equal to torch's.
* ``attncourse.block``: the block around attention (LayerNorm, RMSNorm, the MLP, Post-LN
  and Pre-LN encoder blocks with their residuals), equal to torch's.
* ``attncourse.verb_roles``: a verb reading its subject and object; one head vs several,
  trained in torch; the one-head lower bound; head ablation.
* ``attncourse.plotting``: matplotlib figures; take arrays and labels, return a Figure.
* ``attncourse.multihead_figures``: chapter 4's figures (heads side by side, ablation).
* ``attncourse.pretrained``: a real model offline (all-MiniLM-L6-v2): its attention,
  recomputed with ``multihead``; ablation, value-weighted norms, rollout.
* ``attncourse.pretrained_figures``: chapter 7's figures (attention maps of a real model).
* ``attncourse.explorers``: the explorers that run in the browser, with or without a
  kernel (attention, graph, convolution, model, answer box), each one's Python beside its
  JavaScript; they import the maths above, never define it.
* ``attncourse.convolution``: a kernel-K convolution built as K attention heads with
  positional scores (Cordonnier et al.); ``convolution_figures`` draws it.
* ``attncourse.validation``: the argument checks every maths module makes (TypeError for
  the wrong kind of thing, ValueError for a wrong value, each naming the argument).
* ``attncourse.checks``: feedback on the exercises, one check per exercise.
* ``attncourse.instructor``: the student version of the chapters, and grading
  (``python -m attncourse.instructor --help``).
"""

from attncourse.attention import (
    causal_mask,
    dot_product_scores,
    scaled_dot_product_attention,
    softmax,
)

__all__ = ["causal_mask", "dot_product_scores", "scaled_dot_product_attention", "softmax"]
