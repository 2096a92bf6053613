"""Evaluation code runs a model's forward pass with autograd on.

Why it matters
    With autograd on, every forward pass records a graph and keeps each layer's
    activations alive for a ``backward()`` that evaluation never calls. Measured
    on small models: 2.9 to 3.4 times the peak memory for one kept batch, and 13
    to 18% slower on CPU; on a GPU it is the difference between a batch size that
    fits and one that runs out of memory. Outputs also come back with
    ``requires_grad=True``, so collecting them (``preds.append(out)``) keeps every
    batch's graph alive until the list dies.

    Evaluation code means: a function named like evaluation (evaluate, validate,
    val, test, predict, infer, generate, sample, score) that trains nothing; a
    loop over a validation/test loader (``val_loader``, ``testloader``) that runs
    no backward pass, at module level too (the tutorial script that trains, then
    tests); a helper only evaluation code calls; a forward on validation/test
    data; an inference script (weights loaded into the model, nothing trained);
    code after ``model.eval()`` that never calls ``backward()``; a model's own
    inference method (``def predict(self, x): return self(x).argmax(1)``) when it
    switches to eval mode or returns only what no gradient flows through. A
    forward is ``model(x)``, ``model(**batch)``, ``model.forward(x)`` or
    ``self(x)`` in such a method. Files that use transformers or accelerate
    without importing torch are checked too.

    Structure says so too, whatever the names: a forward whose output is only
    ever read detached from autograd (``out = model(x)`` and every read of
    ``out`` is ``out.detach()``, ``out.argmax(1)``, ``out.cpu().numpy()``,
    ``out.item()``), in code that runs no backward pass (not in ``forward`` and
    what it runs); a function of a file that trains nothing running a model it
    loads itself (``from_pretrained``, ``load_state_dict``) and keeps to itself
    (never returns, stores or hands on the model or its parameters); a function
    only the top level calls, each time after training there (a notebook that
    trains, then runs ``imagine_digit(model, 3)``), whose result reaches no
    backward pass.

When the code is fine
    - the forward runs under ``with torch.no_grad():``, ``torch.inference_mode()``,
      ``torch.set_grad_enabled(False)`` (or a flag that is False in the evaluation
      phase, as in a shared train/val loop), after a
      ``torch.set_grad_enabled(False)`` or ``torch.no_grad().__enter__()`` statement,
      or in a function decorated with
      ``@torch.no_grad()`` / ``@torch.inference_mode()``, or in a helper every caller
      of which calls it with grad off;
    - its output feeds ``backward()`` or ``torch.autograd.grad`` (training, a
      frozen teacher in a training step, adversarial examples, saliency maps);
    - every parameter of the model is frozen (``requires_grad_(False)``);
    - a smoke test: a model built right there, not trained or loaded before it
      runs (training that only comes later, as in a notebook that checks shapes
      first, does not count), run once to check shapes;
    - a model's other methods (``forward`` and what it calls, ``sample`` of a
      policy, a ``predict`` step that returns differentiable values): they run in
      whatever grad mode the caller chose;
    - frameworks run the hook with grad off: Lightning ``validation_step`` /
      ``test_step`` / ``predict_step`` in a class that derives from Lightning (or
      from a base class imported from elsewhere, which may), HF ``Trainer`` and
      skorch ``NeuralNet`` subclasses, HF ``generate()`` (not a forward here);
    - the file is written for another framework: it imports TensorFlow, Keras, JAX or
      Flax (or uses transformers' ``TF``/``Flax`` model classes) and nothing
      torch-related (so does every PyTorch rule);
    - the call is not a model's forward (``criterion(out, y)``, metrics,
      tokenizers, transforms).

    Also reported: evaluation that reaches the model through a helper the training
    step shares (``y_pred = self.infer(x)`` in ``validation_step``), at the call; and
    one epoch function for training and evaluation whose backward pass runs only
    under its flag (``if is_train:``) while the forward always runs with autograd on,
    when the file calls it with the flag off (a literal, or a default the call leaves out,
    for which no backward pass runs: ``_epoch(loader, train=False)``, ``phase="val"`` for
    ``if phase == "train":``, no optimizer for ``if optimizer is not None:``) and not under
    ``no_grad`` (no fix: ``torch.set_grad_enabled(flag)``
    around the forward is the change to make).

    Callers that disagree: a helper that runs a forward with autograd on, which some
    calls run under ``no_grad`` (here or in other files of the project) and others do
    not, is reported at each unprotected call whose result feeds no backward pass, not
    in the helper (``print(validate(model, test_loader))`` after the epoch loop wraps
    its other call), also when the helper reaches the forward through further helpers
    (``calc_loss_loader`` -> ``calc_loss_batch`` -> ``model(x)``). From another file: a call of the project's evaluation function
    (named for evaluation, running a forward of what it is handed) that another call
    in the project runs under ``no_grad`` (``test.test(model=model)`` in the training
    loop), and a method inherited from a project base class of another file that runs
    a model attribute (``self._forward(batch)`` after ``self.model.eval()``), or a method
    this class leaves to subclasses in other files that run a model attribute there
    (``self.evaluate(loaders)`` after ``self.model.eval()``, with ``evaluate`` abstract
    here); a method of a base class in another file that runs ``backward()`` counts as a
    backward pass (``self._backward(loss)``).

    Evaluation inside the training loop counts as well: a branch such as ``if step % 100
    == 0:`` that draws a batch from the validation loader (``next(iter(val_loader))``, a
    loop over ``test_loader``) or fetches one by naming its split (``get_batch("val")``,
    where ``get_batch`` picks its data by that parameter; one that ignores it returns
    training data) and whose output reaches no backward pass. HF ``model.generate()``
    is not reported: it runs under ``torch.no_grad()`` itself.

How to fix
    Run evaluation without autograd. ``--fix`` adds ``@torch.no_grad()`` to a
    function that only evaluates, or wraps the evaluation loop (or the statement)
    in ``with torch.no_grad():``, importing torch if needed.
    ``torch.inference_mode()`` is faster still when the outputs never re-enter
    autograd.
"""

from __future__ import annotations

import re
from typing import Iterable, List, Optional, Set

import libcst as cst

from mllint.findings import Applicability, Example, Finding, Fix
from mllint.semantics.model import BACKWARD, CALL, FORWARD, MODULE_SCOPE, Effect, FileModel
from mllint.semantics.names import after_docstring, dotted, shorten
from mllint.semantics.phases import Evidence, Phases
from mllint.semantics.roles import MODEL
from mllint.semantics.phases.words import cut_forward_possible, eval_name_strength, evaluation_possible, loaded_here_possible, torch_file_possible

CODE = "ML002"
NAME = "inference-without-no-grad"
MESSAGE = "forward pass in evaluation code runs with autograd on"
TRIGGERS = ("eval", "val", "test", "predict", "infer", "generat", "sampl", "score", "load", "pretrained", "weights", "backward", "translat", "decod", "dev", ".data",
            "detach", "numpy", "item", "tolist", "argm", "step")
REQUIRES = ("torch|transformers|accelerate|lightning|timm",)  # a transformers or accelerate loop need not import torch
DEFAULT_ENABLED = True
FRAMEWORK = "torch"  # left out for files of another framework (mllint/frameworks.py)
FIX = "safe"


def SCREEN(facts) -> bool:
    # Sound: check() needs a torch file (a torch-family import or a class) and a forward with
    # evidence of evaluation, which comes only from names, weight loads and mode switches
    # (words.evaluation_possible); the shared-epoch report instead needs a backward pass under
    # a training flag (_flag_shared_forwards: a BACKWARD effect).
    # _project_helper_calls: a call of another file's function named for evaluation (its
    # protected callers elsewhere), or of an inherited method in evaluation code (the evidence above).
    # output_evidence needs a call of a method that cuts a value from autograd on what may be a
    # forward's output (words.cut_forward_possible);
    # loaded_here_evidence a weights load in a plain function; after_training_evidence training in
    # the file (a backward pass or an optimizer step) and a function of the file called at
    # module level.
    return torch_file_possible(facts) and (
        evaluation_possible(facts) or not facts.call_names.isdisjoint({"backward", "manual_backward"})
        or "step" in facts.call_names and not facts.function_names.isdisjoint(facts.script_call_quals)
        or any(eval_name_strength(name) == "strong" for name in facts.call_names)
        or cut_forward_possible(facts)  # output_evidence: a forward's output read detached
        or loaded_here_possible(facts)  # loaded_here_evidence: a load in a function that is no method
        or facts.pretrained_build  # ... or a model built with trained weights there
    )


def check(model: FileModel) -> Iterable[Finding]:
    phases = Phases.of(model)
    if not phases.torch_file:
        return
    inference_helpers: Set[str] = set()  # helpers whose callers disagree, with an evaluating forward
    unprotected_in: Set[str] = set()  # helpers whose callers disagree, with a forward that runs with grad on
    for effect in phases.forwards():
        if phases.protected(effect) or phases.frozen(effect.ref, effect.ctx.scope):
            continue
        if effect.ctx.scope in model.functions and phases.callers_disagree(effect.ctx.scope):
            # some callers run it under no_grad: the others are reported (_disagreeing_calls)
            unprotected_in.add(effect.ctx.scope)
            if not _named_method(effect) and (phases.evidence(effect) or phases.mode_evidence(effect)) is not None:
                inference_helpers.add(effect.ctx.scope)
            continue
        if _named_method(effect):
            continue  # model.predict(x) of a class we cannot see may run under no_grad itself
        if phases.backpropagated_by_bases(effect.ctx.scope):
            continue  # a piece of the training step of a base class in another file
        if _plain_class_without_graph(model, phases, effect):
            continue  # ``self.forward(x)`` of a from-scratch class with no tensor that requires grad
        if _forward_turns_grad_off(model, effect.ref, effect.ctx.scope):
            continue  # model(x, mode="inference") whose forward runs that branch under no_grad
        evidence = (phases.evidence(effect) or phases.mode_evidence(effect) or phases.loaded_here_evidence(effect)
                    or phases.after_training_evidence(effect) or phases.output_evidence(effect))
        if evidence is None or not _result_is_gradient_free(phases, effect.ctx.scope):
            continue
        message = f"`{shorten(_called(effect))}(...)` {evidence.brief} builds an autograd graph for nothing"
        detail = (
            f"The forward pass of `{effect.ref}` {evidence.text} keeps its activations for a backward pass that "
            f"never comes (memory and time); run it under `torch.no_grad()` or `torch.inference_mode()`."
        )
        yield model.finding(effect.node, CODE, NAME, message, _fix(model, phases, effect, evidence), detail,
                            basis=evidence.basis)
    for key in model.functions:
        # a helper that reaches its forward through further helpers (``calc_loss_loader`` ->
        # ``calc_loss_batch`` -> ``model(x)``), called under no_grad at some calls and not at others
        if key not in unprotected_in and _reaches_unprotected_forward(model, phases, key, set()) \
                and not phases.trains(key) and phases.callers_disagree(key):
            unprotected_in.add(key)
    at_calls: Set[cst.CSTNode] = set()  # helper calls reported by _helper_forwards
    yield from _helper_forwards(model, phases, at_calls)
    yield from _flag_shared_forwards(model, phases)
    yield from _disagreeing_calls(model, phases, inference_helpers, unprotected_in, at_calls)
    yield from _project_helper_calls(model, phases)


def _called(effect: Effect) -> str:
    """The forward's callee as the code writes it: ``self.forward`` for ``self.forward(x)``,
    the model's reference otherwise (``model(x)``, ``self.encoder(x)``)."""
    node = effect.node
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "forward":
        return f"{effect.ref}.forward"
    return effect.ref


def _plain_class_without_graph(model: FileModel, phases: Phases, effect: Effect) -> bool:
    """``self.forward(x)`` in a class that is no ``nn.Module`` (``Phases.plain_class_of``) whose
    code asks no tensor to require a gradient (no ``requires_grad``, no ``Parameter``) and whose
    ``forward`` runs no model of its own: its weights are plain tensors (a perceptron updated by
    hand), so no autograd graph is recorded."""
    if effect.ref != "self":
        return False
    cls = phases.plain_class_of(effect.ctx.scope)
    if cls is None:
        return False
    text = model.code_of(model.classes[cls].node)
    if "requires_grad" in text or "Parameter" in text:
        return False
    key = model.method_key(cls, "forward")
    summary = model.summaries.get(key) if key is not None else None
    return not (summary is not None and summary.forwards)


def _switched_or_model(model: FileModel, phases: Phases, ref: str, scope: str) -> bool:
    """Whether ``ref`` holds a model: by its role (not its name), or because this scope switches
    it to eval mode."""
    if model.has_role(ref, MODEL, scope, by_name=False):
        return True
    return any(e.kind == "eval" and e.ref == ref for e in phases.events(scope))


def _disagreeing_calls(model: FileModel, phases: Phases, inference_helpers: Set[str], unprotected_in: Set[str],
                       at_calls: Set[cst.CSTNode]) -> Iterable[Finding]:
    """A helper of this file that runs a forward pass, called under ``no_grad`` at some calls
    (here or in other files) and not at others: the protected calls show it is inference, so
    each unprotected call of this file whose result feeds no backward pass is reported (the
    helper itself is not, see check())."""
    forward_sites = {e.node for e in phases.forwards()}
    for effect in model.effects:
        callee = effect.callee
        if effect.kind != CALL or not callee or effect.node in forward_sites or not isinstance(effect.node, cst.Call):
            continue
        if effect.node in at_calls or callee not in unprotected_in:
            continue  # reported already, or the helper's own forward runs under no_grad
        summary = model.summaries.get(callee)
        if summary is None or not summary.forwards or phases.trains(callee) or not phases.callers_disagree(callee):
            continue
        if phases.protected(effect) or phases.feeds_backward(effect.node, effect.ctx.scope):
            continue
        evidence = phases.evidence(effect) or phases.mode_evidence(effect)
        if evidence is None and callee not in inference_helpers and phases.function_evidence(callee) is None:
            continue
        if _fresh_receiver(phases, effect):
            continue
        helper = callee.rsplit(".", 1)[-1]
        message = f"`{shorten(helper, 24)}(...)` runs a forward with autograd on here; other calls run it under no_grad"
        detail = (
            f"`{helper}()` runs a forward pass and other calls of it run under `torch.no_grad()`; this call does "
            f"not, so the activations are kept for a backward pass that never comes; run it under `torch.no_grad()`."
        )
        fix = _fix(model, phases, effect, evidence) if evidence is not None else None
        yield model.finding(effect.node, CODE, NAME, message, fix, detail, basis="structure")


def _fresh_receiver(phases: Phases, effect: Effect) -> bool:
    """A method call on a model built right there and not trained or loaded by then
    (``p = JointDistribution(...)``, then ``p.sample(...)``, ``p.log_marginal(x)``): trying the
    freshly built model out (``Phases.smoke_test``), not inference."""
    node = effect.node
    receiver = dotted(node.func.value) if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) else None
    if not receiver or phases.loop_evidence(effect.ctx) is not None:
        return False  # (over a test loader: evaluation, whatever trained it out of sight, such as pyro's SVI)
    return phases.smoke_test(Effect(FORWARD, receiver, node, effect.ctx, effect.order))


def _reaches_unprotected_forward(model: FileModel, phases: Phases, key: str, seen: Set[str]) -> bool:
    """Whether function ``key`` runs a model forward with autograd on, itself or through the
    helpers of this file it calls outside any grad-off region (as far as ``key``'s own body and
    the helpers' bodies say: whoever calls ``key`` decides the rest)."""
    if key in seen or key in phases.grad_off_functions():
        return False
    seen.add(key)
    summary = model.summaries.get(key)
    if summary is None or not summary.forwards:
        return False
    for effect in model.effects_in(key):
        if effect.ctx.grad == "off" or phases._withs_grad(effect.ctx) is not None:
            continue
        if effect.kind == FORWARD and not phases.frozen(effect.ref, key):
            return True
        if effect.kind == CALL and effect.callee and _reaches_unprotected_forward(model, phases, effect.callee, seen):
            return True
    return False


def _project_helper_calls(model: FileModel, phases: Phases) -> Iterable[Finding]:
    """Calls of functions defined in other files of the project that run a model forward with
    autograd on:

    - an evaluation function (its name, or a ``.eval()`` it runs) that another call in the
      project runs under ``no_grad`` (``test.test(model=model)`` in the training loop, while
      ``test.py``'s own ``__main__`` wraps its call): this call leaves autograd on;
    - a method inherited from a project base class of another file that runs a model
      attribute (``self._forward(batch)`` running ``self.model(...)``), called in evaluation
      code of this file (after ``self.model.eval()``, over a test loader)."""
    project = model.project
    if project is None:
        return
    forward_sites = {e.node for e in phases.forwards()}
    for call, ctx in model.calls:
        if call in forward_sites:
            continue
        name = dotted(call.func)
        if not name:
            continue
        found = None
        inherited = False
        if name.startswith("self.") and name.count(".") == 1:
            cls = model.class_scope_of(ctx.scope)
            if cls is not None and "." not in cls:
                found = project.inherited_method(cls, name[len("self."):]) or _overriding_method(
                    model, project, cls, name[len("self."):])
                inherited = True
        else:
            qual = model.imports.qualname(call.func)
            if qual:
                found = project.function_defined(qual)
        if found is None:
            continue
        rel, fn = found
        if fn.grad_off or fn.backward or fn.steps or not fn.forwards_grad_on:
            continue
        effect = Effect(CALL, name, call, ctx, model.call_order.get(call, 0))
        if phases.protected(effect) or phases.feeds_backward(call, ctx.scope):
            continue
        if inherited:
            refs = [r for r in sorted(fn.forwards_grad_on) if r.startswith("self.") and r != name
                    and _switched_or_model(model, phases, r, ctx.scope)]
            if not refs:
                continue
            effect = Effect(CALL, refs[0], call, ctx, effect.order)
            evidence = phases.evidence(effect) or phases.mode_evidence(effect)
            if evidence is None:
                continue
            what = f"a forward pass of `{refs[0]}`"
            message = f"`{shorten(fn.key.rsplit('.', 1)[-1], 20)}(...)` {evidence.brief} runs `{shorten(refs[0], 16)}` with autograd on"
        else:
            helper = fn.key.rsplit(".", 1)[-1]
            if "." in fn.key or eval_name_strength(helper) != "strong":
                continue
            if not any(call_facts.grad_off for _, call_facts in project.calls_of(rel, fn.key)):
                continue
            evidence = None
            what = "a forward pass"
            message = f"`{shorten(helper, 24)}(...)` runs a forward with autograd on; other calls run it under no_grad"
        helper = fn.key.rsplit(".", 1)[-1]
        detail = (
            f"`{helper}()` (defined in {rel}) runs {what} with autograd on; here its activations are kept for a "
            f"backward pass that never comes; run the call under `torch.no_grad()`."
        )
        fix = _fix(model, phases, effect, evidence) if evidence is not None else None
        yield model.finding(call, CODE, NAME, message, fix, detail, basis="structure")


def _overriding_method(model: FileModel, project, cls: str, method: str):
    """For ``self.method()`` in class ``cls`` whose own ``method`` runs no forward (an abstract
    ``evaluate`` left to subclasses): (file, facts) of an override in a subclass of another
    file that runs a forward with autograd on, when no override runs a backward pass or an
    optimizer step or turns autograd off. None otherwise."""
    key = model.method_key(cls, method)
    if key is None or key not in model.functions:
        return None
    summary = model.summaries.get(key)
    if summary is not None and (summary.forwards or summary.backward_sites):
        return None
    if model.effects_in(key):
        return None  # it does something of its own (calls a helper, switches a mode...)
    overrides = project.overrides(cls, method)
    if not overrides or any(fn.grad_off or fn.backward or fn.steps for _rel, fn in overrides):
        return None
    return next(((rel, fn) for rel, fn in overrides if fn.forwards_grad_on), None)


def _flag_shared_forwards(model: FileModel, phases: Phases) -> Iterable[Finding]:
    """One epoch function for training and evaluation (``run_epoch(model, loader,
    is_train)``): its backward pass runs only under ``if is_train:``, its forward always with
    autograd on, and the file calls it with the flag off (``False``, an evaluation phase name,
    or a default of those the call leaves out), not under ``no_grad``. Reported without a fix
    (the right one is ``with torch.set_grad_enabled(is_train):`` around the forward)."""
    for effect in phases.forwards():
        fn = model.functions.get(effect.ctx.scope)
        if fn is None or phases.protected(effect) or phases.frozen(effect.ref, effect.ctx.scope):
            continue
        if phases.managed(fn) or phases.unit_test(fn):
            continue
        flag = phases.training_flag(fn.key)
        if flag is None or any(flag in _cond_words(c.text) for c in effect.ctx.conds):
            continue
        off_sites = [
            site for site in phases.call_sites(fn.key)
            if phases.flag_off_at(fn.key, site, flag) and not phases.protected(site)
        ]
        if not off_sites:
            continue
        site = off_sites[0].node
        caller = model.code_of(site.func) if isinstance(site, cst.Call) else fn.node.name.value
        value = phases.argument_value(fn.key, site, flag)
        # the value that evaluates (``cross_valid=True`` where the backward pass runs under
        # ``if not cross_valid:``), and the backward pass's own condition for set_grad_enabled
        setting = f"{flag}={model.code_of(value)}" if value is not None else flag
        message = (
            f"`{shorten(effect.ref, 16)}(...)` in `{shorten(fn.node.name.value, 20)}()` builds an autograd graph "
            f"also with `{shorten(setting, 24)}`"
        )
        detail = (
            f"The forward pass of `{effect.ref}` in `{fn.node.name.value}()` runs with autograd on also with "
            f"`{setting}`, where no backward pass runs (evaluation, as in the call `{shorten(caller, 40)}(...)`): its "
            f"activations are kept for a backward pass that never comes; run it under "
            f"`torch.set_grad_enabled({_training_condition(model, phases, fn.key, flag)})`."
        )
        # (no line numbers in the message or the detail: they change when a fix elsewhere
        # moves the call, and the fixer would take the finding for a new one)
        yield model.finding(effect.node, CODE, NAME, message, None, detail, basis="structure")


def _training_condition(model: FileModel, phases: Phases, key: str, flag: str) -> str:
    """The condition on ``flag`` that the backward passes of function ``key`` run under, as
    code (``is_train``, ``not cross_valid``, ``phase == "train"``); the flag itself when it
    cannot be read."""
    for effect in model.effects_in(key):
        if effect.kind != BACKWARD:
            continue
        for cond in effect.ctx.conds:
            if flag in _cond_words(cond.text) and cond.branch in ("if", "else"):
                if cond.branch == "if":
                    return cond.text
                if isinstance(cond.node, cst.UnaryOperation) and isinstance(cond.node.operator, cst.Not):
                    return model.code_of(cond.node.expression)
                return f"not {cond.text}" if isinstance(cond.node, (cst.Name, cst.Attribute)) else f"not ({cond.text})"
    return flag


def _cond_words(text: str) -> List[str]:
    return [w for w in re.split(r"\W+", text or "") if w]


def _shared_with_training(model: FileModel, phases: Phases, callee: str) -> bool:
    """A helper that runs a model forward itself (not through further helpers) and whose
    result a training step of this file backpropagates through at another call site."""
    if not any(e.kind == FORWARD for e in model.effects_in(callee)):
        return False
    return any(phases.feeds_backward(site.node, site.ctx.scope) for site in phases.call_sites(callee))


def _model_method(model: FileModel, phases: Phases, callee: str) -> bool:
    """A method of a model class of this file that runs its layers (``vae.reconstruct_img(x)``):
    calling it is a forward pass of the model, whatever the method is called."""
    fn = model.functions.get(callee)
    return (
        fn is not None and fn.cls is not None and phases.in_model_class(callee)
        and any(e.kind == FORWARD for e in model.effects_in(callee))
    )


def _named_method(effect: Effect) -> bool:
    """``model.predict_step(x)``, ``model.encode(x)``: a forward by another name (ML005 reads
    these), not ``model(x)`` or ``model.forward(x)``."""
    func = effect.node.func if isinstance(effect.node, cst.Call) else None
    return isinstance(func, cst.Attribute) and func.attr.value != "forward" and dotted(func) != effect.ref


def _forward_turns_grad_off(model: FileModel, ref: str, scope: str) -> bool:
    """Whether the model's class (of this file, or of another file of the project) turns
    autograd off inside its own ``forward`` (``elif mode == "inference": with torch.no_grad():
    ...``): which path a call takes is the forward's business, so the call is left alone."""
    for candidate in dict.fromkeys((ref, model.canonical(ref, scope))):
        cls = model.instance_of.get(scope, candidate)
        if cls is not None and cls in model.classes:
            key = model.method_key(cls, "forward")
            return key is not None and _has_grad_off_block(model.functions[key].node)
        if model.project is None:
            continue
        for _targets, value, _ctx in reversed(model.assignments_to(candidate)):
            while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                    and value.func.attr.value in ("to", "cuda", "cpu", "eval", "train", "float", "half"):
                value = value.func.value
            if isinstance(value, cst.Call):
                qual = model.imports.qualname(value.func)
                return bool(qual) and model.project.forward_grad_off(qual)
            break
    return False


def _has_grad_off_block(node: cst.CSTNode) -> bool:
    found = []

    class Finder(cst.CSTVisitor):
        def visit_WithItem(self, item: cst.WithItem) -> None:
            call = item.item
            if isinstance(call, cst.Call) and (dotted(call.func) or "").rsplit(".", 1)[-1] in ("no_grad", "inference_mode"):
                found.append(item)

    node.visit(Finder())
    return bool(found)


def _result_is_gradient_free(phases: Phases, scope: str) -> bool:
    """In a model's own inference method, no_grad is right only when nothing it returns can
    carry a gradient: a caller in another file may train on a differentiable ``predict()``
    (a Kalman filter's predict step)."""
    fn = phases.m.functions.get(scope)
    return fn is None or not phases.in_model_class(scope) or phases.gradient_free_result(fn)


def _helper_forwards(model: FileModel, phases: Phases, at_calls: Set[cst.CSTNode]) -> Iterable[Finding]:
    """Evaluation code that runs a model through a helper shared with training
    (``y_pred = self.infer(x)`` in ``validation_step``, where ``infer`` is also what the
    training step calls): the helper's forward is not evaluation code, the call is."""
    off = phases.grad_off_functions()
    # ``self.forward(x)`` / ``model.forward(x)`` is both a forward of the model and a call of
    # the local method ``forward``: one site, judged once, by the forward pass in check()
    forward_sites = {e.node for e in phases.forwards()}
    for effect in model.effects:
        if effect.kind != CALL or not effect.callee or effect.callee in off or effect.node in forward_sites:
            continue
        summary = model.summaries.get(effect.callee)
        if summary is None or not summary.forwards or phases.trains(effect.callee):
            continue
        if phases.function_evidence(effect.callee) is not None:
            continue  # every caller evaluates: the helper's own forward is reported
        if not (_shared_with_training(model, phases, effect.callee) or _model_method(model, phases, effect.callee)):
            continue
        if phases.protected(effect):
            continue
        evidence = phases.evidence(effect) or phases.mode_evidence(effect)
        if evidence is None or evidence.kind == "callers" or not _result_is_gradient_free(phases, effect.ctx.scope):
            continue
        if _fresh_receiver(phases, effect):
            continue  # ``p = JointDistribution(...); p.sample(...)``: a freshly built model's methods tried out
        at_calls.add(effect.node)
        helper = effect.callee.rsplit(".", 1)[-1]
        message = f"`{shorten(helper, 24)}(...)` {evidence.brief} runs a forward pass that builds an unused autograd graph"
        detail = (
            f"`{helper}()` runs a forward pass {evidence.text} with autograd on: its activations are kept for a "
            f"backward pass that never comes; run it under `torch.no_grad()`."
        )
        yield model.finding(effect.node, CODE, NAME, message, _fix(model, phases, effect, evidence), detail,
                            basis=evidence.basis)


# --- the fix ----------------------------------------------------------------------------------------------


def _no_grad_expression(phases: Phases) -> "tuple[str, bool]":
    """The text that calls torch.no_grad here, and whether ``import torch`` must be added."""
    for local, full in phases.m.imports.aliases.items():
        if full == "torch.no_grad" and local.isidentifier():
            return f"{local}()", False
    name = phases.torch_name()
    if name is not None:
        return f"{name}.no_grad()", False
    return "torch.no_grad()", True


def _with_import(module: cst.Module) -> cst.Module:
    body = list(module.body)
    index = after_docstring(body)
    while index < len(body) and isinstance(body[index], cst.SimpleStatementLine) and isinstance(body[index].body[0], cst.ImportFrom):
        node = body[index].body[0]
        if not (isinstance(node.module, cst.Name) and node.module.value == "__future__"):
            break
        index += 1
    statement = cst.parse_statement("import torch\n")
    body.insert(index, statement)
    return module.with_changes(body=body)


def _change(phases: Phases, old: cst.CSTNode, new: cst.CSTNode, needs_import: bool, description: str) -> Optional[Fix]:
    """The fix replacing ``old`` by ``new``; with ``import torch`` added when the file has none
    (then the whole module changes, and is built only when the fix is asked for)."""
    model = phases.m
    if not needs_import:
        return model.fix_replacing(old, new, Applicability.SAFE, description)

    def build() -> Optional[Fix]:
        module = _with_import(model.replaced(old, new))
        cst.parse_module(module.code)
        return model.fix_from_module(module, Applicability.SAFE, description)

    return model.deferred_fix(Applicability.SAFE, description, build)


def _decorate(phases: Phases, key: str) -> Optional[Fix]:
    fn = phases.m.functions[key]
    expression, needs_import = _no_grad_expression(phases)
    decorator = cst.Decorator(decorator=cst.parse_expression(expression))
    new = fn.node.with_changes(decorators=list(fn.node.decorators) + [decorator])
    return _change(phases, fn.node, new, needs_import, f"Add `@{expression}` to `{fn.node.name.value}()`")


def _wrap(phases: Phases, statement: cst.CSTNode, what: str) -> Optional[Fix]:
    block = phases.block_of(statement)
    if block is None or not isinstance(statement, cst.BaseStatement):
        return None
    expression, needs_import = _no_grad_expression(phases)
    inner = statement.with_changes(leading_lines=())
    wrapped = cst.With(
        items=[cst.WithItem(item=cst.parse_expression(expression))],
        body=cst.IndentedBlock(body=[inner]),
        leading_lines=statement.leading_lines,
    )
    body = [wrapped if item is statement else item for item in block.body]
    return _change(phases, block, block.with_changes(body=body), needs_import, f"Wrap the {what} in `with {expression}:`")


def _outermost_eval_loop(phases: Phases, effect: Effect):
    """The outermost loop around the forward, in its scope, that runs no backward pass."""
    found = None
    loop = effect.ctx.loop
    while loop is not None and not phases.loop_backprops(loop):
        found = loop
        loop = loop.parent
    return found


def _evaluation_unit(phases: Phases, key: str) -> str:
    """The function to decorate for a forward in ``key``: the caller instead, while a
    helper has exactly one caller and that caller only evaluates."""
    seen = {key}
    while True:
        sites = phases.call_sites(key)
        if len(sites) != 1:
            return key
        caller = sites[0].ctx.scope
        if caller in seen or caller == MODULE_SCOPE or not phases.evaluation_only_function(caller):
            return key
        if phases.function_evidence(caller) is None:
            return key
        seen.add(caller)
        key = caller


def _fix(model: FileModel, phases: Phases, effect: Effect, evidence: Evidence) -> Optional[Fix]:
    scope = effect.ctx.scope
    if evidence.kind == "output":
        # only this statement is known to need no gradient (its value is read detached); the
        # rest of the function or loop may compute what a caller backpropagates
        statement = effect.ctx.statement
        if statement is None or not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return None
        small = statement.body[0]
        held = phases.gradient_cut_output(effect)
        if held is small:
            return _wrap(phases, statement, "statement")  # ``out = model(x)``, every read of ``out`` cut
        # ``action = self.q(state).argmax().item()``: the statement's value is the chain on the output
        node = held
        while node is not None and isinstance(small, (cst.Assign, cst.Expr)) and node is not small.value:
            parent = model.index.get(node)
            chained = (isinstance(parent, cst.Attribute) and parent.value is node) or (
                isinstance(parent, cst.Call) and parent.func is node) or (
                isinstance(parent, cst.Subscript) and parent.value is node)
            node = parent if chained else None
        return _wrap(phases, statement, "statement") if node is not None else None
    if scope != MODULE_SCOPE and phases.evaluation_only_function(scope):
        if evidence.kind in ("function", "callers", "mode", "script") or not phases.trains(scope):
            return _decorate(phases, _evaluation_unit(phases, scope))
    if evidence.kind == "loop" and evidence.loop is not None:
        return _wrap(phases, evidence.loop.node, "evaluation loop")
    loop = _outermost_eval_loop(phases, effect)
    if loop is not None:
        return _wrap(phases, loop.node, "evaluation loop")
    statement = effect.ctx.statement
    if statement is None:
        return None
    return _wrap(phases, statement, "statement")


# ---------------------------------------------------------------------------------------
# Examples (collected by the test suite). INVALID examples carry the expected --fix output.


VALID: List[str] = [
    # a freshly built model's own methods tried out in a notebook's test function (nothing
    # loaded, nothing trained): not inference
    """
import torch
from torch import nn


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 2)
        self.dec = nn.Linear(2, 4)

    def forward(self, x):
        return self.dec(self.enc(x))

    def reconstruct(self, x):
        return self.dec(self.enc(x)).sigmoid()


def test_vae():
    p = VAE()
    x = torch.rand(2, 4)
    print("reconstruction", p.reconstruct(x))


test_vae()
""",
    # a unit test of a freshly built module switched to eval mode: its output only asserted on
    """
import torch

vectorizer = Vectorizer(hid_size=64)
vectorizer.train(False)
out1 = vectorizer(dummy_lines)
out2 = vectorizer(dummy_lines)
assert tuple(out1.shape) == (5, 64)
assert torch.allclose(out1, out2, atol=1e-5), "dropout must be off when training is False"
""",
    # a freshly built model switched to eval mode for a shape check on random input (a model
    # file's ``__main__``): no trained weights, nothing to evaluate
    """
import torch

if __name__ == "__main__":
    model = DeepLab(n_classes=21, n_blocks=[3, 4, 23, 3])
    model.eval()
    image = torch.randn(1, 3, 513, 513)
    print("output:", model(image).shape)
""",
    # the same shape check of a model built and switched in one go, then rebound in eval mode
    """
import torch

if __name__ == "__main__":
    model = DeepLab(n_classes=21).eval()
    model = model.eval()
    image = torch.randn(1, 3, 513, 513)
    print("output:", model(image).shape)
""",
    # the same shape check when the model was moved to the GPU under a flag after it was built
    """
import torch
from torch import nn

net = nn.Sequential(nn.Linear(784, 128), nn.Dropout(0.2), nn.Linear(128, 784))
if torch.cuda.is_available():
    net = net.cuda()

x, y = next(iter(train_loader))
outputs = net(x)
print(outputs.shape)

optimizer = torch.optim.SGD(net.parameters(), lr=0.25)
for x, y in train_loader:
    loss = nn.functional.mse_loss(net(x), x)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
""",
    # a shape check of a freshly built model (a notebook's "expect output size" cell) before
    # it is trained; the best weights are loaded only at the end: no evaluation there
    """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)
        self.drop = nn.Dropout(0.2)

    def forward(self, x):
        return self.fc(self.drop(x))


test_batch = torch.randn(4, 8)
net = Net()
outputs = net(test_batch)
print(outputs.shape)

optimizer = torch.optim.Adam(net.parameters())
for x, y in train_loader:
    loss = nn.functional.cross_entropy(net(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    torch.save(net.state_dict(), "best.pt")

net.load_state_dict(torch.load("best.pt"))
""",
    # the name held a loaded model before it was rebound to a fresh one: what was loaded into
    # the old object says nothing about the new one's sample output
    """
import torch
from transformers import AutoModel


model = AutoModel.from_pretrained("distilbert-base-uncased")
model = Siamese("distilbert-base-uncased")
with torch.no_grad():
    output = model(**batch)
print(output)
trainer = Trainer(model, train_dataset=train_set)
trainer.train()
""",
    # a helper named for predictions whose result one branch of the training step uses in
    # the loss (the other branch assigns the same name): training code, not evaluation
    """
import torch


class Trainer:
    def __init__(self, net, optimizer, loss_type):
        self.net, self.optimizer, self.loss_type = net, optimizer, loss_type

    def _get_negative_predictions(self, users, n=5):
        items = torch.randint(0, 100, (len(users) * n,))
        return self.net(users.repeat(n), items).view(n, len(users))

    def fit(self, loader):
        for users, items in loader:
            positive = self.net(users, items)
            if self.loss_type == "adaptive_hinge":
                negative = self._get_negative_predictions(users)
            else:
                negative = self.net(users, torch.randint(0, 100, (len(users),)))
            loss = (1 - positive + negative).clamp(min=0).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
""",
    # a from-scratch class (no nn.Module) whose weights are plain tensors updated by hand: its
    # forward records no autograd graph, in evaluate() or anywhere
    """
import torch


class Perceptron:
    def __init__(self, n):
        self.w = torch.zeros(n, 1)
        self.b = torch.zeros(1)

    def forward(self, x):
        return torch.where(x @ self.w + self.b > 0.0, 1.0, 0.0)

    def update(self, x, y):
        errors = y - self.forward(x).reshape(-1)
        self.w += (errors @ x).reshape(-1, 1)
        self.b += errors.sum()

    def evaluate(self, x, y):
        predictions = self.forward(x).reshape(-1)
        return (predictions == y).float().mean().item()
""",
    # ``dev`` alone is a device, not the development split
    """
    import torch

    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = torch.nn.Linear(4, 2).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        opt.zero_grad()
        out = model(x.to(dev))
        torch.nn.functional.cross_entropy(out, y.to(dev)).backward()
        opt.step()
    """,
    # the evaluation function runs under no_grad
    """
    import torch

    def evaluate(model, loader):
        model.eval()
        correct = 0
        with torch.no_grad():
            for x, y in loader:
                correct += (model(x).argmax(1) == y).sum().item()
        return correct
    """,
    # shared train/val loop: grad is on only in the training phase
    """
    import torch

    def train_model(model, dataloaders, criterion, optimizer, epochs):
        for epoch in range(epochs):
            for phase in ["train", "val"]:
                model.train() if phase == "train" else model.eval()
                for inputs, labels in dataloaders[phase]:
                    optimizer.zero_grad()
                    with torch.set_grad_enabled(phase == "train"):
                        outputs = model(inputs)
                        loss = criterion(outputs, labels)
                        if phase == "train":
                            loss.backward()
                            optimizer.step()
    """,
    # a frozen teacher inside a training step: its output feeds the loss
    """
    import torch
    import torch.nn.functional as F

    teacher.eval()
    for x, y in train_loader:
        optimizer.zero_grad()
        soft = teacher(x)
        logits = student(x)
        loss = F.kl_div(F.log_softmax(logits, -1), F.softmax(soft, -1)) + F.cross_entropy(logits, y)
        loss.backward()
        optimizer.step()
    """,
    # Lightning runs validation_step with grad off
    """
    import torch
    import lightning as L

    class LitClassifier(L.LightningModule):
        def validation_step(self, batch, batch_idx):
            x, y = batch
            loss = torch.nn.functional.cross_entropy(self.model(x), y)
            self.log("val_loss", loss)
    """,
    # generation decorated with @torch.no_grad()
    """
    import torch

    @torch.no_grad()
    def generate(model, idx, max_new_tokens):
        model.eval()
        for _ in range(max_new_tokens):
            logits = model(idx)[:, -1, :]
            idx = torch.cat([idx, logits.argmax(-1, keepdim=True)], dim=1)
        return idx
    """,
    # inference_mode
    """
    import torch

    def predict(model, batch):
        model.eval()
        with torch.inference_mode():
            return model(batch).softmax(-1)
    """,
    # a helper every caller of which runs it with grad off
    """
    import torch

    def run_batches(net, loader):
        return [net(x) for x, _ in loader]

    def validate(net, val_loader):
        net.eval()
        with torch.no_grad():
            outputs = run_batches(net, val_loader)
        return outputs
    """,
    # adversarial evaluation: the attack needs gradients of the model's output
    """
    import torch
    import torch.nn.functional as F

    def test_robustness(model, test_loader, eps):
        model.eval()
        correct = 0
        for x, y in test_loader:
            x.requires_grad_(True)
            loss = F.cross_entropy(model(x), y)
            grad, = torch.autograd.grad(loss, x)
            x_adv = (x + eps * grad.sign()).detach()
            with torch.no_grad():
                correct += (model(x_adv).argmax(1) == y).sum().item()
        return correct
    """,
    # not models: losses, metrics, tokenizers in evaluation code
    """
    import torch

    def evaluate(model, loader, criterion, metric, tokenizer):
        model.eval()
        with torch.no_grad():
            for text, y in loader:
                out = model(tokenizer(text))
                metric(out, y)
                criterion(out, y)
    """,
    # HF Trainer subclass: the Trainer owns the evaluation loop
    """
    import torch
    from transformers import Trainer

    class MyTrainer(Trainer):
        def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None):
            outputs = model(**inputs)
            return outputs.loss, outputs.logits, inputs["labels"]
    """,
    # an evaluate-named helper whose result is trained on (skorch-style infer)
    """
    import torch

    class Net:
        def infer(self, x):
            return self.module_(x)

        def train_step(self, x, y):
            self.optimizer_.zero_grad()
            y_pred = self.infer(x)
            loss = self.criterion_(y_pred, y)
            loss.backward()
            self.optimizer_.step()
    """,
    # grad turned off for the whole inference script
    """
    import torch

    torch.set_grad_enabled(False)
    model = Net()
    model.load_state_dict(torch.load("model.pt"))
    model.eval()
    print(model(x))
    """,
    # a model whose parameters are all frozen builds no graph
    """
    import torch

    def extract_features(backbone, loader):
        backbone.eval()
        backbone.requires_grad_(False)
        return [backbone(x) for x in loader]
    """,
    # a Grad-CAM style saliency map: the output is backpropagated
    """
    import torch

    def predict_saliency(model, image, target):
        model.eval()
        image.requires_grad_(True)
        score = model(image)[0, target]
        score.backward()
        return image.grad.abs()
    """,
    # a smoke test of a freshly built model (a shape check) in a file that also loads weights elsewhere
    """
import torch
import torch.nn as nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)

def test():
    net = Net()
    y = net(torch.randn(2, 4))
    print(y.size())

def load(path):
    model = Net()
    model.load_state_dict(torch.load(path))
    return model

if __name__ == "__main__":
    test()
""",
    # a model's differentiable predict step (a Kalman filter's): it returns a state, which training may backpropagate through
    """
import torch
import torch.nn as nn

class KalmanFilter(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.F = nn.Parameter(torch.eye(n))

    def forward(self, x, z):
        return self.update(self.predict(x), z)

    def update(self, x, z):
        return x + 0.5 * (z - x)

    def predict(self, x):
        return x @ self.F.T
""",
    # a policy's sample(): its log-probabilities feed the loss (sampling is not inference inside a model)
    """
import torch
import torch.nn as nn

class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 2)

    def forward(self, s):
        return torch.distributions.Categorical(logits=self.net(s))

    def sample(self, s):
        dist = self(s)
        a = dist.sample()
        return a, dist.log_prob(a)
""",
    # a model's predict() that returns differentiable scores: a caller elsewhere may train on them
    """
import torch
import torch.nn as nn

class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 1)

    def forward(self, x):
        return self.lin(x)

    def predict(self, x):
        return torch.sigmoid(self(x))
""",
    # validation_step of a LightningModule subclass through a base class of the project: Lightning runs it with grad off
    """
import torch
from lightning.pytorch import LightningModule

class Base(LightningModule):
    pass

class Classifier(Base):
    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", torch.nn.functional.cross_entropy(self.model(x), y))
""",
    # `model.forward(x)` in training: its output feeds backward
    """
import torch

def train_step(model, optimizer, x, y):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model.forward(x), y)
    loss.backward()
    optimizer.step()
""",
    # the same shared helper, called under no_grad in the evaluation code
    """
import torch

class Learner:
    def __init__(self, module, optimizer, criterion):
        self.module = module
        self.optimizer = optimizer
        self.criterion = criterion

    def infer(self, x):
        return self.module(x)

    def train_step(self, x, y):
        self.optimizer.zero_grad()
        loss = self.criterion(self.infer(x), y)
        loss.backward()
        self.optimizer.step()

    def validation_step(self, x, y):
        self.module.eval()
        with torch.no_grad():
            y_pred = self.infer(x)
        return self.criterion(y_pred, y).item()
""",
    # a filter's predict step that other code builds on (its log_prob trains through it): no sign of evaluation, a differentiable result
    """
import torch

class FilterState:
    def __init__(self, dynamic_model, mean, cov):
        self._dynamic_model = dynamic_model
        self._mean = mean
        self._cov = cov

    def predict(self, dt):
        pred_mean = self._dynamic_model(self._mean, dt)
        F = self._dynamic_model.jacobian(dt)
        return FilterState(self._dynamic_model, pred_mean, F @ self._cov @ F.T)
""",

    # the shared epoch function turns grad off with the flag
    """
import torch

def run_epoch(model, loader, optimizer, is_train):
    model.train(is_train)
    for x, y in loader:
        with torch.set_grad_enabled(is_train):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        if is_train:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

def fit(model, train_loader, val_loader, optimizer):
    run_epoch(model, train_loader, optimizer, True)
    run_epoch(model, val_loader, optimizer, False)
""",
    # a step function with a flag that this file only ever calls for training
    """
import torch

def step(model, batch, optimizer, update):
    loss = model(batch).mean()
    if update:
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()

def fit(model, loader, optimizer):
    for batch in loader:
        step(model, batch, optimizer, update=True)
""",

    # a notebook's look at a freshly built, untrained model on one validation batch; the model
    # trained later is a new object (the name is rebound after the forward)
    """
import torch
from torch import nn

dataset = torch.utils.data.TensorDataset(torch.randn(32, 6), torch.randint(0, 3, (32,)))
train_loader = torch.utils.data.DataLoader(dataset, batch_size=8)
valid_loader = torch.utils.data.DataLoader(dataset, batch_size=8)

# look at the output of an untrained model on one validation batch
net = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
inputs, targets = next(iter(valid_loader))
probs = torch.softmax(net(inputs), dim=1)
print(probs.shape)

# then the model that is really trained (same name, a new object)
net = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
opt = torch.optim.Adam(net.parameters())
for epoch in range(2):
    for inputs, targets in train_loader:
        opt.zero_grad()
        nn.functional.cross_entropy(net(inputs), targets).backward()
        opt.step()
""",
    # a notebook that trains one model, then builds a fresh layer (with dropout) and looks at
    # the shape of its output on a test image: nothing trained that layer
    """
import torch
from torch import nn

dataset = torch.utils.data.TensorDataset(torch.randn(32, 1, 8, 8), torch.randint(0, 3, (32,)))
loader = torch.utils.data.DataLoader(dataset, batch_size=8)
model = nn.Sequential(nn.Flatten(), nn.Linear(64, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()

# what does a convolution with dropout do to one test image?
test_image = torch.randn(1, 1, 8, 8)
conv_block = nn.Sequential(nn.Conv2d(1, 4, 3), nn.Dropout(0.2))
print(conv_block(test_image).shape)
""",
    # a shape check of a fresh model on a `test_*` tensor, before a helper trains another model
    """
import torch
from torch import nn

# check the output shape of a freshly built model before training anything
probe = nn.GRU(1, 8, batch_first=True)
test_batch = torch.zeros(2, 5, 1)
test_out, test_h = probe(test_batch)
print(test_out.shape, test_h.shape)


def fit(model, steps):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        opt.zero_grad()
        out, _ = model(torch.randn(4, 5, 1))
        out.pow(2).mean().backward()
        opt.step()
    return model


gru = fit(nn.GRU(1, 8, batch_first=True), 100)
""",
    # a TensorFlow model from transformers, no torch import: not torch code (mllint/frameworks.py)
    """
    from transformers import AutoTokenizer, TFAutoModelForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
    model = TFAutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
    model.eval()
    outputs = model(tokenizer(["hello"], return_tensors="tf"))
    """,
    # a TensorFlow training loop (GradientTape) and evaluation: not torch code
    """
    import tensorflow as tf
    from transformers import TFAutoModelForSequenceClassification

    model = TFAutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
    optimizer = tf.keras.optimizers.Adam(3e-5)
    for batch in train_loader:
        with tf.GradientTape() as tape:
            loss = model(batch, training=True).loss
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    for batch in test_loader:
        preds = model(batch, training=False).logits
    """,
    # a Flax model from transformers (through the module): not torch code
    """
    import transformers

    model = transformers.FlaxAutoModel.from_pretrained("bert-base-uncased")
    for batch in test_loader:
        outputs = model(**batch)
    """,
    # the model's own forward runs its inference branch under no_grad: which branch a call
    # takes is the forward's business
    """
    import torch
    import torch.nn as nn

    class Pix2Pix(nn.Module):
        def __init__(self):
            super().__init__()
            self.g = nn.Linear(3, 3)

        def forward(self, data, mode):
            if mode == "generator":
                return self.g(data).sum()
            with torch.no_grad():
                fake = self.g(data)
            return fake

    model = Pix2Pix()
    model.eval()
    for data in test_loader:
        save(model(data, mode="inference"))
    """,
    # a shape check of a module-level model, called once right after it is built and
    # before anything trains
    """
    import torch
    import torch.nn as nn

    def test():
        out, hidden = encoder(torch.ones(3, 1, 4))
        print(out.size())

    encoder = nn.GRU(4, 8)
    test()
    opt = torch.optim.SGD(encoder.parameters(), lr=0.1)
    for x in loader:
        opt.zero_grad()
        encoder(x)[0].sum().backward()
        opt.step()
    """,
    # a periodic evaluation in the training loop under no_grad (get_batch picks the split)
    """
    import torch

    def get_batch(split):
        data = train_data if split == "train" else val_data
        ix = torch.randint(len(data) - block_size, (batch_size,))
        return torch.stack([data[i:i + block_size] for i in ix]), torch.stack([data[i + 1:i + 1 + block_size] for i in ix])

    def train(model, optimizer, max_iters, eval_interval):
        for it in range(max_iters):
            if it % eval_interval == 0:
                model.eval()
                with torch.no_grad():
                    xv, yv = get_batch("val")
                    logits, val_loss = model(xv, yv)
                print(it, val_loss.item())
                model.train()
            xb, yb = get_batch("train")
            logits, loss = model(xb, yb)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    """,
    # get_batch ignores its split: the "val" batch is training data (no evidence of evaluation)
    """
    import torch

    def get_batch(split):
        ix = torch.randint(len(train_data) - block_size, (batch_size,))
        return torch.stack([train_data[i:i + block_size] for i in ix]), torch.stack([train_data[i + 1:i + 1 + block_size] for i in ix])

    def train(model, optimizer, max_iters, log_every):
        for it in range(max_iters):
            if it % log_every == 0:
                xv, yv = get_batch("val")
                logits, probe_loss = model(xv, yv)
                print(it, probe_loss.item())
            xb, yb = get_batch("train")
            logits, loss = model(xb, yb)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    """,
    # the branch's forward on held-out data feeds a backward pass (an auxiliary loss): training
    """
    import torch
    import torch.nn.functional as F

    def train(model, optimizer, train_loader, val_loader, aux_every):
        model.train()
        for step, (xb, yb) in enumerate(train_loader):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            if step % aux_every == 0:
                vx, vy = next(iter(val_loader))
                loss = loss + 0.1 * F.cross_entropy(model(vx), vy)
            loss.backward()
            optimizer.step()
    """,
    # HF generate() runs under torch.no_grad() itself: not a forward with autograd on
    """
    import torch
    from transformers import AutoModelForSeq2SeqLM

    model = AutoModelForSeq2SeqLM.from_pretrained("t5-small")
    model.eval()
    for batch in val_loader:
        print(model.generate(batch["input_ids"], max_new_tokens=32))
    """,
    # one epoch function for training and validation: grad follows the flag
    """
    import torch
    import torch.nn.functional as F

    class Trainer:
        def _epoch(self, loader, train=False):
            self.model.train() if train else self.model.eval()
            total = 0.0
            with torch.set_grad_enabled(train):
                for x, y in loader:
                    loss = F.cross_entropy(self.model(x), y)
                    if train:
                        self.optimizer.zero_grad()
                        loss.backward()
                        self.optimizer.step()
                    total += loss.item()
            return total

        def fit(self, epochs):
            for epoch in range(epochs):
                self._epoch(self.train_loader, train=True)
                print(epoch, self._epoch(self.val_loader))
    """,
    # the shared epoch function is called with its flag off under no_grad
    """
    import torch
    import torch.nn.functional as F

    def run_epoch(model, loader, optimizer, phase):
        total = 0.0
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            if phase == "train":
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            total += loss.item()
        return total

    def main(model, optimizer, train_loader, val_loader, epochs):
        for epoch in range(epochs):
            model.train()
            run_epoch(model, train_loader, optimizer, "train")
            model.eval()
            with torch.no_grad():
                print(epoch, run_epoch(model, val_loader, optimizer, "val"))
    """,
    # grad turned off through a helper given a constant
    """
    import torch

    def set_grad(flag):
        torch.set_grad_enabled(flag)

    def evaluate(model, loader):
        set_grad(False)
        model.eval()
        outs = [model(x) for x in loader]
        set_grad(True)
        return outs
    """,
    # a capitalised name bound to a class (no instance, no parameters anywhere) is a constructor
    """
import torch
import torch.nn as nn


class Generator(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, width), nn.BatchNorm1d(width))

    def forward(self, z):
        return self.body(z)


Arch = Generator  # the class, chosen once


def sample_shapes(widths):
    return [Arch(w) for w in widths]
""",
    # a helper that training backpropagates through and evaluation runs under no_grad
    """
import torch


def encode(model, x):
    return model(x)


def main(model, loader, val_x, opt):
    for x, y in loader:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(encode(model, x), y)
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        print(encode(model, val_x))
    """,
    # a training step that detaches a generator's output for the discriminator: the loop backpropagates
    """
    import torch

    def train_gan(G, D, loader, opt_d, z_dim):
        for real in loader:
            fake = G(torch.randn(real.size(0), z_dim)).detach()
            loss = D(fake).mean() - D(real).mean()
            opt_d.zero_grad()
            loss.backward()
            opt_d.step()
    """,
    # a model's own stop-gradient inside forward: model internals, run in the caller's grad mode
    """
    import torch
    from torch import nn

    class Siamese(nn.Module):
        def __init__(self):
            super().__init__()
            self.online = nn.Linear(8, 8)
            self.target = nn.Linear(8, 8)

        def forward(self, x):
            t = self.target(x)
            return self.online(x) - t.detach()
    """,
    # a model loaded in a function that hands it back: the caller may fine-tune it
    """
    import torch
    from transformers import AutoModel

    def load_with_probe(name, batch):
        model = AutoModel.from_pretrained(name)
        hidden = model(**batch).last_hidden_state
        return model, hidden
    """,
    # a grad-off context entered by hand: grad is off from there on
    """
    import torch

    def main(model_path, test_set):
        model = torch.load(model_path, weights_only=False)
        model.eval()
        torch.no_grad().__enter__()
        for mix, target in test_set:
            print(model(mix).sub(target).abs().mean())
    """,
    # a helper called after training whose result trains another model
    """
    import torch

    def soft_targets(teacher, x):
        return torch.softmax(teacher(x), dim=-1)

    teacher = torch.nn.Linear(4, 3)
    opt = torch.optim.SGD(teacher.parameters(), lr=0.1)
    for x, y in train_loader:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(teacher(x), y).backward()
        opt.step()
    student = torch.nn.Linear(4, 3)
    opt_s = torch.optim.SGD(student.parameters(), lr=0.1)
    for x, y in train_loader:
        opt_s.zero_grad()
        loss = torch.nn.functional.kl_div(student(x).log_softmax(-1), soft_targets(teacher, x))
        loss.backward()
        opt_s.step()
    """,
]

INVALID = [
    # a model trained one step in a self-test, then rebound to itself in eval mode
    # (``layer = layer.eval()`` returns the same, trained module) and compared on made-up input
    Example(
        """
import torch
from torch import nn

if __name__ == "__main__":
    x = torch.randn(8, 10)
    layer = nn.Sequential(nn.Linear(10, 20), nn.BatchNorm1d(20))
    before = layer(x)
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.3)
    nn.MSELoss()(before, torch.randn(8, 20)).backward()
    optimizer.step()
    layer = layer.eval()
    after = layer(x)
    print((after - before).abs().max())
""",
        fixed="""
import torch
from torch import nn

if __name__ == "__main__":
    x = torch.randn(8, 10)
    layer = nn.Sequential(nn.Linear(10, 20), nn.BatchNorm1d(20))
    before = layer(x)
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.3)
    nn.MSELoss()(before, torch.randn(8, 20)).backward()
    optimizer.step()
    layer = layer.eval()
    with torch.no_grad():
        after = layer(x)
    print((after - before).abs().max())
""",
    ),
    # a model's own method over the test loader of a loop, where the model was trained by
    # something the file does not show as training (pyro's SVI): evaluation, not a try-out
    Example(
        """
import torch
from torch import nn


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(784, 20)
        self.dec = nn.Linear(20, 784)

    def reconstruct_img(self, x):
        return torch.sigmoid(self.dec(self.enc(x)))


def main(svi, train_loader, test_loader):
    vae = VAE()
    for x, _ in train_loader:
        svi.step(x)
    for i, (x, _) in enumerate(test_loader):
        reco = vae.reconstruct_img(x[0])
        show(reco.detach().numpy())
""",
        fixed="""
import torch
from torch import nn


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(784, 20)
        self.dec = nn.Linear(20, 784)

    def reconstruct_img(self, x):
        return torch.sigmoid(self.dec(self.enc(x)))


def main(svi, train_loader, test_loader):
    vae = VAE()
    for x, _ in train_loader:
        svi.step(x)
    with torch.no_grad():
        for i, (x, _) in enumerate(test_loader):
            reco = vae.reconstruct_img(x[0])
            show(reco.detach().numpy())
""",
    ),
    # a test forward each epoch whose output name the training step below binds again: the
    # training step's own forward is what reaches its backward pass, not the test one
    Example(
        """
import torch

for epoch in range(3):
    net.eval()
    pred = net(test_x)
    print(loss_func(pred, test_y).item())
    net.train()
    for x, y in loader:
        pred = net(x)
        loss = loss_func(pred, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
""",
        fixed="""
import torch

for epoch in range(3):
    net.eval()
    with torch.no_grad():
        pred = net(test_x)
    print(loss_func(pred, test_y).item())
    net.train()
    for x, y in loader:
        pred = net(x)
        loss = loss_func(pred, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
""",
    ),
    # an agent's action from the network's output read through ``.data`` (no history kept)
    Example(
        """
import torch


class Agent:
    def __init__(self, net, support):
        self.net, self.support = net, support

    def act(self, state):
        return (self.net(state.unsqueeze(0)).data * self.support).sum(2).max(1)[1][0]
""",
        fixed="""
import torch


class Agent:
    def __init__(self, net, support):
        self.net, self.support = net, support

    def act(self, state):
        with torch.no_grad():
            return (self.net(state.unsqueeze(0)).data * self.support).sum(2).max(1)[1][0]
""",
    ),
    # the same kind of class with weights that require gradients: its evaluate() records a graph
    Example(
        """
import torch


class LogReg:
    def __init__(self, n):
        self.w = torch.zeros(n, 1, requires_grad=True)
        self.b = torch.zeros(1, requires_grad=True)

    def forward(self, x):
        return torch.sigmoid(x @ self.w + self.b)

    def evaluate(self, x, y):
        probas = self.forward(x).reshape(-1)
        return ((probas > 0.5).float() == y).float().mean().item()
""",
        fixed="""
import torch


class LogReg:
    def __init__(self, n):
        self.w = torch.zeros(n, 1, requires_grad=True)
        self.b = torch.zeros(1, requires_grad=True)

    def forward(self, x):
        return torch.sigmoid(x @ self.w + self.b)

    @torch.no_grad()
    def evaluate(self, x, y):
        probas = self.forward(x).reshape(-1)
        return ((probas > 0.5).float() == y).float().mean().item()
""",
    ),
    # a language model's own generate(): what it returns is built from ``.data`` of the output
    Example(
        """
import torch
from torch import nn

class CharLM(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.vocab = vocab
        self.rnn = nn.GRU(16, 32)
        self.out = nn.Linear(32, len(vocab))

    def forward(self, x, hidden):
        y, hidden = self.rnn(x, hidden)
        return self.out(y), hidden

    def generate(self, start, hidden, n=100):
        chars = []
        x = start
        for _ in range(n):
            logits, hidden = self.forward(x, hidden)
            weights = logits.squeeze().data.div(0.8).exp().cpu()
            idx = torch.multinomial(weights, 1)[0]
            chars.append(self.vocab[idx])
        return "".join(chars)
""",
        fixed="""
import torch
from torch import nn

class CharLM(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.vocab = vocab
        self.rnn = nn.GRU(16, 32)
        self.out = nn.Linear(32, len(vocab))

    def forward(self, x, hidden):
        y, hidden = self.rnn(x, hidden)
        return self.out(y), hidden

    @torch.no_grad()
    def generate(self, start, hidden, n=100):
        chars = []
        x = start
        for _ in range(n):
            logits, hidden = self.forward(x, hidden)
            weights = logits.squeeze().data.div(0.8).exp().cpu()
            idx = torch.multinomial(weights, 1)[0]
            chars.append(self.vocab[idx])
        return "".join(chars)
""",
    ),
    # the output is only read detached: no gradient can flow from it, whatever the function's name
    Example(
        """
import torch

def render(model, image):
    out = model(image.unsqueeze(0))
    return out[0].permute(1, 2, 0).detach().cpu().numpy()
""",
        fixed="""
import torch

def render(model, image):
    with torch.no_grad():
        out = model(image.unsqueeze(0))
    return out[0].permute(1, 2, 0).detach().cpu().numpy()
""",
    ),
    # a model the function loads itself and keeps to itself, in a file that trains nothing
    Example(
        """
import torch
from transformers import AutoModel, AutoTokenizer

def extract_features(name, texts):
    model = AutoModel.from_pretrained(name)
    tokenizer = AutoTokenizer.from_pretrained(name)
    feats = []
    for text in texts:
        out = model(**tokenizer(text, return_tensors="pt"))
        feats.append(out.last_hidden_state.mean(1))
    return torch.cat(feats)
""",
        fixed="""
import torch
from transformers import AutoModel, AutoTokenizer

@torch.no_grad()
def extract_features(name, texts):
    model = AutoModel.from_pretrained(name)
    tokenizer = AutoTokenizer.from_pretrained(name)
    feats = []
    for text in texts:
        out = model(**tokenizer(text, return_tensors="pt"))
        feats.append(out.last_hidden_state.mean(1))
    return torch.cat(feats)
""",
    ),
    # a notebook that trains, then runs a helper that only looks at the trained model's outputs
    Example(
        """
import torch

def imagine(model, digit, n=100):
    best, best_p = None, 0.0
    for _ in range(n):
        x = torch.randn(32, 784)
        p = torch.softmax(model(x), -1)[:, digit]
        if p.max() > best_p:
            best_p, best = p.max(), x[p.argmax()]
    return best, best_p

model = torch.nn.Linear(784, 10)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in train_loader:
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
image, prob = imagine(model, 3)
print(prob.item())
""",
        fixed="""
import torch

@torch.no_grad()
def imagine(model, digit, n=100):
    best, best_p = None, 0.0
    for _ in range(n):
        x = torch.randn(32, 784)
        p = torch.softmax(model(x), -1)[:, digit]
        if p.max() > best_p:
            best_p, best = p.max(), x[p.argmax()]
    return best, best_p

model = torch.nn.Linear(784, 10)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in train_loader:
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
image, prob = imagine(model, 3)
print(prob.item())
""",
    ),
    # a loss helper that reaches the model through another helper (which training shares): the
    # evaluation calls it under no_grad, the call before training does not
    Example(
        """
import torch

def batch_loss(x, y, model):
    return torch.nn.functional.cross_entropy(model(x), y)

def loader_loss(loader, model):
    total = 0.0
    for x, y in loader:
        total += batch_loss(x, y, model).item()
    return total / len(loader)

def evaluate(model, val_loader):
    model.eval()
    with torch.no_grad():
        loss = loader_loss(val_loader, model)
    model.train()
    return loss

def train(model, train_loader, val_loader, opt):
    for x, y in train_loader:
        opt.zero_grad()
        batch_loss(x, y, model).backward()
        opt.step()
    print(evaluate(model, val_loader))

model = torch.nn.Linear(4, 3)
print(loader_loss(val_loader, model))
train(model, train_loader, val_loader, torch.optim.SGD(model.parameters(), lr=0.1))
""",
        fixed="""
import torch

def batch_loss(x, y, model):
    return torch.nn.functional.cross_entropy(model(x), y)

def loader_loss(loader, model):
    total = 0.0
    for x, y in loader:
        total += batch_loss(x, y, model).item()
    return total / len(loader)

def evaluate(model, val_loader):
    model.eval()
    with torch.no_grad():
        loss = loader_loss(val_loader, model)
    model.train()
    return loss

def train(model, train_loader, val_loader, opt):
    for x, y in train_loader:
        opt.zero_grad()
        batch_loss(x, y, model).backward()
        opt.step()
    print(evaluate(model, val_loader))

model = torch.nn.Linear(4, 3)
with torch.no_grad():
    print(loader_loss(val_loader, model))
train(model, train_loader, val_loader, torch.optim.SGD(model.parameters(), lr=0.1))
""",
    ),
    # a model class an evaluation harness drives (lm-eval's `LM`): its methods evaluate; the
    # no_grad goes on the method that consumes the forward's output
    Example(
        """
import torch
import torch.nn.functional as F
from lm_eval.api.model import LM
from transformers import AutoModelForCausalLM, AutoTokenizer


class MyLM(LM):
    def __init__(self, name):
        super().__init__()
        self.model = AutoModelForCausalLM.from_pretrained(name)
        self.tokenizer = AutoTokenizer.from_pretrained(name)

    def _model_call(self, inps):
        return self.model(inps).logits

    def loglikelihood(self, requests):
        results = []
        for context, continuation in [r.args for r in requests]:
            ids = torch.tensor([self.tokenizer.encode(context + continuation)])
            logprobs = F.log_softmax(self._model_call(ids), dim=-1)
            results.append((logprobs[0, -1].max().item(), True))
        return results
""",
        fixed="""
import torch
import torch.nn.functional as F
from lm_eval.api.model import LM
from transformers import AutoModelForCausalLM, AutoTokenizer


class MyLM(LM):
    def __init__(self, name):
        super().__init__()
        self.model = AutoModelForCausalLM.from_pretrained(name)
        self.tokenizer = AutoTokenizer.from_pretrained(name)

    def _model_call(self, inps):
        return self.model(inps).logits

    @torch.no_grad()
    def loglikelihood(self, requests):
        results = []
        for context, continuation in [r.args for r in requests]:
            ids = torch.tensor([self.tokenizer.encode(context + continuation)])
            logprobs = F.log_softmax(self._model_call(ids), dim=-1)
            results.append((logprobs[0, -1].max().item(), True))
        return results
""",
    ),
    # the process function of an ignite Engine that is run on the validation loader
    Example(
        """
import torch
from torch import nn
from ignite.engine import Engine

model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.2), nn.Linear(8, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
train_loader = [(torch.randn(8, 4), torch.randint(0, 2, (8,))) for _ in range(10)]
val_loader = [(torch.randn(8, 4), torch.randint(0, 2, (8,))) for _ in range(3)]


def train_step(engine, batch):
    model.train()
    x, y = batch
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def eval_step(engine, batch):
    model.eval()
    x, y = batch
    return model(x).argmax(1).eq(y).float().mean().item()


trainer = Engine(train_step)
evaluator = Engine(eval_step)
trainer.run(train_loader, max_epochs=2)
evaluator.run(val_loader)
""",
        fixed="""
import torch
from torch import nn
from ignite.engine import Engine

model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.2), nn.Linear(8, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
train_loader = [(torch.randn(8, 4), torch.randint(0, 2, (8,))) for _ in range(10)]
val_loader = [(torch.randn(8, 4), torch.randint(0, 2, (8,))) for _ in range(3)]


def train_step(engine, batch):
    model.train()
    x, y = batch
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


@torch.no_grad()
def eval_step(engine, batch):
    model.eval()
    x, y = batch
    return model(x).argmax(1).eq(y).float().mean().item()


trainer = Engine(train_step)
evaluator = Engine(eval_step)
trainer.run(train_loader, max_epochs=2)
evaluator.run(val_loader)
""",
    ),
    # a test worker started as a process on the shared model (``mp.Process(target=test,
    # args=(shared, ...))``): the process runs it as a call would, so `agent` is that model
    Example(
        """
import torch
import torch.multiprocessing as mp
from torch import nn


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 16)
        self.policy = nn.Linear(16, 2)

    def pi(self, x):
        return torch.softmax(self.policy(torch.relu(self.body(x))), dim=-1)


def test(agent, episodes):
    for _ in range(episodes):
        state = torch.randn(1, 4)
        action = agent.pi(state).argmax(-1).item()
        print(action)


def train(agent, rank):
    opt = torch.optim.SGD(agent.parameters(), lr=0.01)
    for _ in range(100):
        opt.zero_grad()
        agent.pi(torch.randn(8, 4)).log().mean().backward()
        opt.step()


if __name__ == "__main__":
    shared = ActorCritic()
    shared.share_memory()
    workers = [mp.Process(target=test, args=(shared, 10))]
    workers += [mp.Process(target=train, args=(shared, rank)) for rank in range(2)]
    for p in workers:
        p.start()
""",
        fixed="""
import torch
import torch.multiprocessing as mp
from torch import nn


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 16)
        self.policy = nn.Linear(16, 2)

    def pi(self, x):
        return torch.softmax(self.policy(torch.relu(self.body(x))), dim=-1)


@torch.no_grad()
def test(agent, episodes):
    for _ in range(episodes):
        state = torch.randn(1, 4)
        action = agent.pi(state).argmax(-1).item()
        print(action)


def train(agent, rank):
    opt = torch.optim.SGD(agent.parameters(), lr=0.01)
    for _ in range(100):
        opt.zero_grad()
        agent.pi(torch.randn(8, 4)).log().mean().backward()
        opt.step()


if __name__ == "__main__":
    shared = ActorCritic()
    shared.share_memory()
    workers = [mp.Process(target=test, args=(shared, 10))]
    workers += [mp.Process(target=train, args=(shared, rank)) for rank in range(2)]
    for p in workers:
        p.start()
""",
    ),
    # a loop over the development split (the NLP name for the validation set)
    Example(
        """
import torch


def run_dev(model, dev_loader):
    model.eval()
    total = 0.0
    for src, tgt in dev_loader:
        total += model(src).argmax(-1).eq(tgt).float().mean().item()
    return total
""",
        fixed="""
import torch


@torch.no_grad()
def run_dev(model, dev_loader):
    model.eval()
    total = 0.0
    for src, tgt in dev_loader:
        total += model(src).argmax(-1).eq(tgt).float().mean().item()
    return total
""",
    ),
    # a module imported under the name later given to the model (``import model`` then
    # ``model = model.mnist()``): from then on the name is the model
    Example(
        """
import torch
import model

model = model.mnist(input_dims=784)
model.eval()
for data, target in test_loader:
    output = model(data)
    print(output.argmax(1).eq(target).sum().item())
""",
        fixed="""
import torch
import model

model = model.mnist(input_dims=784)
model.eval()
with torch.no_grad():
    for data, target in test_loader:
        output = model(data)
        print(output.argmax(1).eq(target).sum().item())
""",
    ),
    # the evaluation function forgets no_grad: @torch.no_grad() on it
    Example(
        """
import torch

def evaluate(model, loader):
    model.eval()
    correct = 0
    for x, y in loader:
        correct += (model(x).argmax(1) == y).sum().item()
    return correct
""",
        fixed="""
import torch

@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    correct = 0
    for x, y in loader:
        correct += (model(x).argmax(1) == y).sum().item()
    return correct
""",
    ),
    # an inline validation loop inside a training function: the loop is wrapped
    Example(
        """
import torch

def train(model, train_loader, val_loader, optimizer, criterion, epochs):
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
        model.eval()
        val_loss = 0.0
        for x, y in val_loader:
            val_loss += criterion(model(x), y).item()
        print(epoch, val_loss)
""",
        fixed="""
import torch

def train(model, train_loader, val_loader, optimizer, criterion, epochs):
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
        model.eval()
        val_loss = 0.0
        with torch.no_grad():
            for x, y in val_loader:
                val_loss += criterion(model(x), y).item()
        print(epoch, val_loss)
""",
    ),
    # predictions collected with their graphs; torch was not imported: the fix imports it
    Example(
        """
from torch import nn

def predict(net, batches):
    net.eval()
    preds = []
    for xb in batches:
        preds.append(net(xb))
    return preds
""",
        fixed="""
import torch
from torch import nn

@torch.no_grad()
def predict(net, batches):
    net.eval()
    preds = []
    for xb in batches:
        preds.append(net(xb))
    return preds
""",
    ),
    # module-level test loop after training
    Example(
        """
import torch

model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in train_loader:
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()

model.eval()
correct = 0
for x, y in test_loader:
    correct += (model(x).argmax(1) == y).sum().item()
""",
        fixed="""
import torch

model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in train_loader:
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()

model.eval()
correct = 0
with torch.no_grad():
    for x, y in test_loader:
        correct += (model(x).argmax(1) == y).sum().item()
""",
    ),
    # autoregressive generation without no_grad (torch imported under an alias)
    Example(
        """
import torch as T

def generate(model, idx, steps):
    model.eval()
    for _ in range(steps):
        logits = model(idx)[:, -1, :]
        idx = T.cat([idx, logits.argmax(-1, keepdim=True)], dim=1)
    return idx
""",
        fixed="""
import torch as T

@T.no_grad()
def generate(model, idx, steps):
    model.eval()
    for _ in range(steps):
        logits = model(idx)[:, -1, :]
        idx = T.cat([idx, logits.argmax(-1, keepdim=True)], dim=1)
    return idx
""",
    ),
    # validation on held-out tensors once per epoch in full-batch training
    Example(
        """
import torch

for epoch in range(100):
    model.train()
    optimizer.zero_grad()
    loss = criterion(model(X_train), y_train)
    loss.backward()
    optimizer.step()
    model.eval()
    val_loss = criterion(model(X_val), y_val)
    model.train()
    print(epoch, loss.item(), val_loss.item())
""",
        fixed="""
import torch

for epoch in range(100):
    model.train()
    optimizer.zero_grad()
    loss = criterion(model(X_train), y_train)
    loss.backward()
    optimizer.step()
    model.eval()
    with torch.no_grad():
        val_loss = criterion(model(X_val), y_val)
    model.train()
    print(epoch, loss.item(), val_loss.item())
""",
    ),
    # a method of a trainer class
    Example(
        """
import torch

class Trainer:
    def validate(self):
        self.model.eval()
        losses = []
        for batch in self.val_loader:
            out = self.model(batch["x"])
            losses.append(self.criterion(out, batch["y"]).item())
        return sum(losses) / len(losses)
""",
        fixed="""
import torch

class Trainer:
    @torch.no_grad()
    def validate(self):
        self.model.eval()
        losses = []
        for batch in self.val_loader:
            out = self.model(batch["x"])
            losses.append(self.criterion(out, batch["y"]).item())
        return sum(losses) / len(losses)
""",
    ),
    # an inference script: weights loaded, nothing trained
    Example(
        """
import torch

model = Net()
model.load_state_dict(torch.load("checkpoint.pt"))
model.eval()
outputs = model(images)
print(outputs.argmax(1))
""",
        fixed="""
import torch

model = Net()
model.load_state_dict(torch.load("checkpoint.pt"))
model.eval()
with torch.no_grad():
    outputs = model(images)
print(outputs.argmax(1))
""",
    ),
    # a helper that only evaluation code calls
    Example(
        """
import torch

def embed(encoder, batch):
    return encoder(batch)

def evaluate(encoder, loader):
    encoder.eval()
    return [embed(encoder, batch) for batch in loader]
""",
        fixed="""
import torch

def embed(encoder, batch):
    return encoder(batch)

@torch.no_grad()
def evaluate(encoder, loader):
    encoder.eval()
    return [embed(encoder, batch) for batch in loader]
""",
    ),
    # sampling images from a GAN generator for logging
    Example(
        """
import torch

def sample_images(generator, n):
    generator.eval()
    z = torch.randn(n, 100)
    images = generator(z)
    save_grid(images)
""",
        fixed="""
import torch

@torch.no_grad()
def sample_images(generator, n):
    generator.eval()
    z = torch.randn(n, 100)
    images = generator(z)
    save_grid(images)
""",
    ),
    # grad explicitly turned back on does not protect
    Example(
        """
import torch

def test(model, test_loader):
    model.eval()
    total = 0
    with torch.enable_grad():
        for x, y in test_loader:
            total += (model(x).argmax(1) == y).sum().item()
    return total
""",
        fixed="""
import torch

def test(model, test_loader):
    model.eval()
    total = 0
    with torch.enable_grad():
        with torch.no_grad():
            for x, y in test_loader:
                total += (model(x).argmax(1) == y).sum().item()
    return total
""",
    ),
    # code after .eval() that never calls backward
    Example(
        """
import torch

def extract_embeddings(model, loader):
    model.eval()
    embeddings = []
    for batch in loader:
        embeddings.append(model(batch))
    return torch.cat(embeddings)
""",
        fixed="""
import torch

@torch.no_grad()
def extract_embeddings(model, loader):
    model.eval()
    embeddings = []
    for batch in loader:
        embeddings.append(model(batch))
    return torch.cat(embeddings)
""",
    ),
    # `model.forward(x)` is a forward pass too
    Example(
        """
import torch

def evaluate(model, loader):
    model.eval()
    correct = 0
    for x, y in loader:
        correct += (model.forward(x).argmax(1) == y).sum().item()
    return correct
""",
        fixed="""
import torch

@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    correct = 0
    for x, y in loader:
        correct += (model.forward(x).argmax(1) == y).sum().item()
    return correct
""",
    ),
    # `self.model.forward(...)` in an evaluator class, after `self.model.eval()`
    Example(
        """
import torch

class Evaluator:
    def __init__(self, model, loader):
        self.model = model
        self.loader = loader

    def run(self):
        self.model.eval()
        scores = []
        for batch in self.loader:
            scores.append(self.model.forward(batch).softmax(-1).max(-1).values.mean().item())
        return sum(scores) / len(scores)
""",
        fixed="""
import torch

class Evaluator:
    def __init__(self, model, loader):
        self.model = model
        self.loader = loader

    @torch.no_grad()
    def run(self):
        self.model.eval()
        scores = []
        for batch in self.loader:
            scores.append(self.model.forward(batch).softmax(-1).max(-1).values.mean().item())
        return sum(scores) / len(scores)
""",
    ),
    # a model's own predict(): `self(x)` with grad on, and only argmax comes back (nothing can train on it)
    Example(
        """
import torch
import torch.nn as nn

class Classifier(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_in, 64), nn.ReLU(), nn.Dropout(0.3), nn.Linear(64, n_out))

    def forward(self, x):
        return self.body(x)

    def predict(self, x):
        self.eval()
        return self(x).argmax(dim=-1)
""",
        fixed="""
import torch
import torch.nn as nn

class Classifier(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_in, 64), nn.ReLU(), nn.Dropout(0.3), nn.Linear(64, n_out))

    def forward(self, x):
        return self.body(x)

    @torch.no_grad()
    def predict(self, x):
        self.eval()
        return self(x).argmax(dim=-1)
""",
    ),
    # an accelerate evaluation loop in a file that never imports torch: the fix imports it
    Example(
        """
from accelerate import Accelerator

def evaluate(model, eval_dataloader, accelerator: Accelerator):
    model.eval()
    losses = []
    for batch in eval_dataloader:
        outputs = model(**batch)
        losses.append(accelerator.gather(outputs.loss).mean().item())
    return sum(losses) / len(losses)
""",
        fixed="""
import torch
from accelerate import Accelerator

@torch.no_grad()
def evaluate(model, eval_dataloader, accelerator: Accelerator):
    model.eval()
    losses = []
    for batch in eval_dataloader:
        outputs = model(**batch)
        losses.append(accelerator.gather(outputs.loss).mean().item())
    return sum(losses) / len(losses)
""",
    ),
    # the tutorials' spelling `testloader` names test data
    Example(
        """
import torch
import torch.nn as nn

net = nn.Sequential(nn.Flatten(), nn.Linear(784, 10))
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
trainloader = torch.utils.data.DataLoader(train_set, batch_size=64)
testloader = torch.utils.data.DataLoader(test_set, batch_size=64)
for epoch in range(2):
    for images, labels in trainloader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(net(images), labels).backward()
        optimizer.step()
net.eval()
correct = 0
for images, labels in testloader:
    correct += (net(images).argmax(1) == labels).sum().item()
print(correct / len(test_set))
""",
        fixed="""
import torch
import torch.nn as nn

net = nn.Sequential(nn.Flatten(), nn.Linear(784, 10))
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
trainloader = torch.utils.data.DataLoader(train_set, batch_size=64)
testloader = torch.utils.data.DataLoader(test_set, batch_size=64)
for epoch in range(2):
    for images, labels in trainloader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(net(images), labels).backward()
        optimizer.step()
net.eval()
correct = 0
with torch.no_grad():
    for images, labels in testloader:
        correct += (net(images).argmax(1) == labels).sum().item()
print(correct / len(test_set))
""",
    ),
    # `validation_step` named like a Lightning hook in a class that does not derive from Lightning
    Example(
        """
import torch

class Runner:
    def __init__(self, net, loader):
        self.net = net
        self.loader = loader

    def validation_step(self, batch):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y).item()

    def validate(self):
        self.net.eval()
        return [self.validation_step(b) for b in self.loader]
""",
        fixed="""
import torch

class Runner:
    def __init__(self, net, loader):
        self.net = net
        self.loader = loader

    def validation_step(self, batch):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y).item()

    @torch.no_grad()
    def validate(self):
        self.net.eval()
        return [self.validation_step(b) for b in self.loader]
""",
    ),
    # evaluation through a helper that training shares: the call in the evaluation code runs with grad on
    Example(
        """
import torch

class Learner:
    def __init__(self, module, optimizer, criterion):
        self.module = module
        self.optimizer = optimizer
        self.criterion = criterion

    def infer(self, x):
        return self.module(x)

    def train_step(self, x, y):
        self.module.train()
        self.optimizer.zero_grad()
        loss = self.criterion(self.infer(x), y)
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def validation_step(self, x, y):
        self.module.eval()
        y_pred = self.infer(x)
        return self.criterion(y_pred, y).item()
""",
        fixed="""
import torch

class Learner:
    def __init__(self, module, optimizer, criterion):
        self.module = module
        self.optimizer = optimizer
        self.criterion = criterion

    def infer(self, x):
        return self.module(x)

    def train_step(self, x, y):
        self.module.train()
        self.optimizer.zero_grad()
        loss = self.criterion(self.infer(x), y)
        loss.backward()
        self.optimizer.step()
        return loss.item()

    @torch.no_grad()
    def validation_step(self, x, y):
        self.module.eval()
        y_pred = self.infer(x)
        return self.criterion(y_pred, y).item()
""",
    ),

    # a script's main() that trains through Pyro's SVI and then evaluates: the loop is wrapped, never main() as a whole
    Example(
        """
import torch
from pyro.infer import SVI

def main(vae, svi, train_loader, test_loader, epochs):
    for epoch in range(epochs):
        for x, _ in train_loader:
            svi.step(x)
        vae.eval()
        for i, (x, _) in enumerate(test_loader):
            reco = vae.decoder(vae.encoder(x))
            print(epoch, i, reco.mean().item())
""",
        fixed="""
import torch
from pyro.infer import SVI

def main(vae, svi, train_loader, test_loader, epochs):
    for epoch in range(epochs):
        for x, _ in train_loader:
            svi.step(x)
        vae.eval()
        with torch.no_grad():
            for i, (x, _) in enumerate(test_loader):
                reco = vae.decoder(vae.encoder(x))
                print(epoch, i, reco.mean().item())
""",
    ),
    # one epoch function for training and validation: backward only under the flag, the forward always with grad on
    Example(
        """
import torch

def run_epoch(model, loader, optimizer, is_train):
    model.train(is_train)
    total = 0.0
    for x, y in loader:
        out = model(x)
        loss = torch.nn.functional.cross_entropy(out, y)
        if is_train:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        total += loss.item()
    return total

def fit(model, train_loader, val_loader, optimizer, epochs):
    for epoch in range(epochs):
        run_epoch(model, train_loader, optimizer, is_train=True)
        run_epoch(model, val_loader, optimizer, is_train=False)
""",
    ),
    # a model's own method that runs its layers, called in the test loop (`vae.reconstruct_img(x)`)
    Example(
        """
import torch
import torch.nn as nn

class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(784, 20)
        self.decoder = nn.Linear(20, 784)

    def forward(self, x):
        return self.decoder(self.encoder(x))

    def reconstruct_img(self, x):
        return torch.sigmoid(self.decoder(self.encoder(x)))

def report(path, test_loader):
    vae = VAE()
    vae.load_state_dict(torch.load(path))
    vae.eval()
    for x, _ in test_loader:
        reco = vae.reconstruct_img(x)
        print(((reco - x) ** 2).mean().item())
""",
        fixed="""
import torch
import torch.nn as nn

class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(784, 20)
        self.decoder = nn.Linear(20, 784)

    def forward(self, x):
        return self.decoder(self.encoder(x))

    def reconstruct_img(self, x):
        return torch.sigmoid(self.decoder(self.encoder(x)))

@torch.no_grad()
def report(path, test_loader):
    vae = VAE()
    vae.load_state_dict(torch.load(path))
    vae.eval()
    for x, _ in test_loader:
        reco = vae.reconstruct_img(x)
        print(((reco - x) ** 2).mean().item())
""",
    ),
    # module-level evaluation of a model trained in a loop above: the shape-check exception does not apply
    Example(
        """
import torch
from torch import nn

train_set = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
train_loader = torch.utils.data.DataLoader(train_set, batch_size=16)
test_loader = torch.utils.data.DataLoader(train_set, batch_size=16)

net = nn.Sequential(nn.Linear(4, 16), nn.Dropout(0.1), nn.Linear(16, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for xb, yb in train_loader:
    opt.zero_grad()
    nn.functional.mse_loss(net(xb), yb).backward()
    opt.step()

# the model trained above, evaluated on a test batch
xb, yb = next(iter(test_loader))
net.eval()
print(nn.functional.mse_loss(net(xb), yb).item())
""",
        fixed="""
import torch
from torch import nn

train_set = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
train_loader = torch.utils.data.DataLoader(train_set, batch_size=16)
test_loader = torch.utils.data.DataLoader(train_set, batch_size=16)

net = nn.Sequential(nn.Linear(4, 16), nn.Dropout(0.1), nn.Linear(16, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for xb, yb in train_loader:
    opt.zero_grad()
    nn.functional.mse_loss(net(xb), yb).backward()
    opt.step()

# the model trained above, evaluated on a test batch
xb, yb = next(iter(test_loader))
net.eval()
with torch.no_grad():
    print(nn.functional.mse_loss(net(xb), yb).item())
""",
    ),
    # module-level evaluation of a model trained by a helper called above: the shape-check exception does not apply
    Example(
        """
import torch
from torch import nn


def fit(model, steps):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        opt.zero_grad()
        model(torch.randn(8, 4)).pow(2).mean().backward()
        opt.step()


regressor = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.2), nn.Linear(8, 1))
fit(regressor, 100)  # trained by a helper before the evaluation
test_x = torch.randn(8, 4)
regressor.eval()
test_pred = regressor(test_x)
print(test_pred.mean().item())
""",
        fixed="""
import torch
from torch import nn


def fit(model, steps):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        opt.zero_grad()
        model(torch.randn(8, 4)).pow(2).mean().backward()
        opt.step()


regressor = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.2), nn.Linear(8, 1))
fit(regressor, 100)  # trained by a helper before the evaluation
test_x = torch.randn(8, 4)
regressor.eval()
with torch.no_grad():
    test_pred = regressor(test_x)
print(test_pred.mean().item())
""",
    ),
    # module-level evaluation of a model weights loaded: the shape-check exception does not apply
    Example(
        """
import torch
from torch import nn

net = nn.Sequential(nn.Linear(4, 16), nn.Dropout(0.5), nn.Linear(16, 1))
net.load_state_dict(torch.load("net.pt"))
test_x = torch.randn(8, 4)
net.eval()
print(net(test_x).mean().item())

# a model trained afterwards is another one: the loaded model is evaluated above
other = nn.Linear(4, 1)
opt = torch.optim.SGD(other.parameters(), lr=0.1)
opt.zero_grad()
other(torch.randn(8, 4)).sum().backward()
opt.step()
""",
        fixed="""
import torch
from torch import nn

net = nn.Sequential(nn.Linear(4, 16), nn.Dropout(0.5), nn.Linear(16, 1))
net.load_state_dict(torch.load("net.pt"))
test_x = torch.randn(8, 4)
net.eval()
with torch.no_grad():
    print(net(test_x).mean().item())

# a model trained afterwards is another one: the loaded model is evaluated above
other = nn.Linear(4, 1)
opt = torch.optim.SGD(other.parameters(), lr=0.1)
opt.zero_grad()
other(torch.randn(8, 4)).sum().backward()
opt.step()
""",
    ),
    # a periodic evaluation inside the training loop, on a batch fetched by split name
    # (get_batch picks its data by the split): the forward is wrapped in no_grad
    Example(
        """
import torch

def get_batch(split):
    data = train_data if split == "train" else val_data
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([data[i:i + block_size] for i in ix])
    y = torch.stack([data[i + 1:i + 1 + block_size] for i in ix])
    return x, y

def train(model, optimizer, max_iters, eval_interval):
    for it in range(max_iters):
        if (it + 1) % eval_interval == 0:
            model.eval()
            xv, yv = get_batch("val")
            logits, val_loss = model(xv, yv)
            print(it, val_loss.item())
            model.train()
        xb, yb = get_batch("train")
        logits, loss = model(xb, yb)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
""",
        fixed="""
import torch

def get_batch(split):
    data = train_data if split == "train" else val_data
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([data[i:i + block_size] for i in ix])
    y = torch.stack([data[i + 1:i + 1 + block_size] for i in ix])
    return x, y

def train(model, optimizer, max_iters, eval_interval):
    for it in range(max_iters):
        if (it + 1) % eval_interval == 0:
            model.eval()
            xv, yv = get_batch("val")
            with torch.no_grad():
                logits, val_loss = model(xv, yv)
            print(it, val_loss.item())
            model.train()
        xb, yb = get_batch("train")
        logits, loss = model(xb, yb)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
""",
    ),
    # every 100 steps a batch drawn from the validation loader inside the training loop
    Example(
        """
import torch
import torch.nn.functional as F

def train(model, optimizer, train_loader, val_loader):
    model.train()
    for step, (xb, yb) in enumerate(train_loader):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            model.eval()
            vx, vy = next(iter(val_loader))
            val_loss = F.cross_entropy(model(vx), vy)
            print(step, loss.item(), val_loss.item())
            model.train()
""",
        fixed="""
import torch
import torch.nn.functional as F

def train(model, optimizer, train_loader, val_loader):
    model.train()
    for step, (xb, yb) in enumerate(train_loader):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            model.eval()
            vx, vy = next(iter(val_loader))
            with torch.no_grad():
                val_loss = F.cross_entropy(model(vx), vy)
            print(step, loss.item(), val_loss.item())
            model.train()
""",
    ),
    # one epoch function for training and validation, called for validation by leaving its
    # flag at the default (False): the forward keeps its graph; no fix (set_grad_enabled(train))
    Example(
        """
import torch
import torch.nn.functional as F

class Trainer:
    def _epoch(self, loader, train=False):
        self.model.train(train)
        total = 0.0
        for x, y in loader:
            loss = F.cross_entropy(self.model(x), y)
            if train:
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
            total += loss.item()
        return total

    def fit(self, epochs):
        for epoch in range(epochs):
            self._epoch(self.train_loader, train=True)
            print(epoch, self._epoch(self.val_loader))
""",
    ),
    # one epoch function that trains only when given an optimizer, called for validation
    # without one: its forward keeps the graph (no fix: set_grad_enabled around it)
    Example(
        """
import torch
import torch.nn.functional as F

def run_epoch(model, loader, optimizer=None):
    model.train(optimizer is not None)
    total = 0.0
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        if optimizer is not None:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        total += loss.item()
    return total

def main(model, optimizer, train_loader, val_loader, epochs):
    for epoch in range(epochs):
        run_epoch(model, train_loader, optimizer)
        print(epoch, run_epoch(model, val_loader))
""",
    ),
    # GAN code names its networks G and D: a capitalised name built from a module class
    # (its parameters handed to an optimizer) is a model, not a constructor; sample() evaluates it
    Example(
        """
import torch
import torch.nn as nn


class Generator(nn.Module):
    def __init__(self, z_dim):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(z_dim, 64), nn.BatchNorm1d(64), nn.Tanh())

    def forward(self, z):
        return self.body(z)


G = Generator(16)
D = nn.Sequential(nn.Linear(64, 1))
G_opt = torch.optim.Adam(G.parameters(), lr=2e-4)
D_opt = torch.optim.Adam(D.parameters(), lr=2e-4)


def sample(z):
    G.eval()
    return G(z)


def train(loader, epochs):
    fixed_z = torch.randn(8, 16)
    for epoch in range(epochs):
        for step, real in enumerate(loader):
            G.train()
            G_opt.zero_grad()
            loss = -D(G(torch.randn(real.size(0), 16))).mean()
            loss.backward()
            G_opt.step()
            if step % 500 == 0:
                torch.save(sample(fixed_z), f"sample_{epoch}_{step}.pt")
""",
        fixed="""
import torch
import torch.nn as nn


class Generator(nn.Module):
    def __init__(self, z_dim):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(z_dim, 64), nn.BatchNorm1d(64), nn.Tanh())

    def forward(self, z):
        return self.body(z)


G = Generator(16)
D = nn.Sequential(nn.Linear(64, 1))
G_opt = torch.optim.Adam(G.parameters(), lr=2e-4)
D_opt = torch.optim.Adam(D.parameters(), lr=2e-4)


@torch.no_grad()
def sample(z):
    G.eval()
    return G(z)


def train(loader, epochs):
    fixed_z = torch.randn(8, 16)
    for epoch in range(epochs):
        for step, real in enumerate(loader):
            G.train()
            G_opt.zero_grad()
            loss = -D(G(torch.randn(real.size(0), 16))).mean()
            loss.backward()
            G_opt.step()
            if step % 500 == 0:
                torch.save(sample(fixed_z), f"sample_{epoch}_{step}.pt")
""",
    ),
    # one test batch drawn with next(enumerate(test_loader)) rebinds the training loop's variable
    # every few steps; the forward on it feeds no backward pass
    Example(
        """
import torch
import torch.nn as nn
import torch.nn.functional as F

net = nn.Sequential(nn.Linear(3, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 4))
optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
train_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 3), torch.zeros(64).long()), batch_size=8)
test_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(16, 3), torch.zeros(16).long()), batch_size=8)

for epoch in range(5):
    for i, batch in enumerate(train_loader):
        inputs, labels = batch
        optimizer.zero_grad()
        loss = F.cross_entropy(net(inputs), labels)
        loss.backward()
        optimizer.step()
        if i % 4 == 0:
            _, batch = next(enumerate(test_loader))
            inputs, labels = batch
            inputs = inputs.float()
            net.eval()
            accuracy = (net(inputs).argmax(1) == labels).float().mean()
            net.train()
            print(epoch, i, accuracy.item())
""",
        fixed="""
import torch
import torch.nn as nn
import torch.nn.functional as F

net = nn.Sequential(nn.Linear(3, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 4))
optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
train_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 3), torch.zeros(64).long()), batch_size=8)
test_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(16, 3), torch.zeros(16).long()), batch_size=8)

for epoch in range(5):
    for i, batch in enumerate(train_loader):
        inputs, labels = batch
        optimizer.zero_grad()
        loss = F.cross_entropy(net(inputs), labels)
        loss.backward()
        optimizer.step()
        if i % 4 == 0:
            _, batch = next(enumerate(test_loader))
            inputs, labels = batch
            inputs = inputs.float()
            net.eval()
            with torch.no_grad():
                accuracy = (net(inputs).argmax(1) == labels).float().mean()
            net.train()
            print(epoch, i, accuracy.item())
""",
    ),
    # the validation loop iterates a progress bar bound first to tqdm(iter(valid_loader))
    Example(
        """
import torch
import torch.nn.functional as F
from tqdm import tqdm


class Trainer:
    def fit(self, model, train_loader, valid_loader, optimizer, epochs):
        for epoch in range(epochs):
            model.train()
            for x, y in tqdm(train_loader):
                optimizer.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                optimizer.step()
            model.eval()
            progress = tqdm(iter(valid_loader), total=len(valid_loader))
            total = 0.0
            for step, (x, y) in enumerate(progress):
                total += F.cross_entropy(model(x), y).item()
                progress.set_description(f"valid loss {total / (step + 1):.4f}")
""",
        fixed="""
import torch
import torch.nn.functional as F
from tqdm import tqdm


class Trainer:
    def fit(self, model, train_loader, valid_loader, optimizer, epochs):
        for epoch in range(epochs):
            model.train()
            for x, y in tqdm(train_loader):
                optimizer.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                optimizer.step()
            model.eval()
            progress = tqdm(iter(valid_loader), total=len(valid_loader))
            total = 0.0
            with torch.no_grad():
                for step, (x, y) in enumerate(progress):
                    total += F.cross_entropy(model(x), y).item()
                    progress.set_description(f"valid loss {total / (step + 1):.4f}")
""",
    ),
    # a helper that one call runs under no_grad and another does not: the unprotected call is
    # reported (and wrapped), not the helper
    Example(
        """
import torch


def validate(model, loader):
    model.eval()
    total = 0.0
    for x, y in loader:
        total += model(x).sum().item()
    return total


def main(model, train_loader, val_loader, test_loader, opt):
    for epoch in range(10):
        model.train()
        for x, y in train_loader:
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        with torch.no_grad():
            print(validate(model, val_loader))
    print(validate(model, test_loader))
""",
        fixed="""
import torch


def validate(model, loader):
    model.eval()
    total = 0.0
    for x, y in loader:
        total += model(x).sum().item()
    return total


def main(model, train_loader, val_loader, test_loader, opt):
    for epoch in range(10):
        model.train()
        for x, y in train_loader:
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        with torch.no_grad():
            print(validate(model, val_loader))
    with torch.no_grad():
        print(validate(model, test_loader))
""",
    ),
]
