"""A model is evaluated in training mode, or left in eval mode for training.

Why it matters
    ``model.train()`` and ``model.eval()`` switch how dropout and batch norm behave.
    Evaluated in training mode, dropout zeroes random activations (two identical
    calls give different outputs, and accuracy drops) and batch norm normalises
    with the statistics of the evaluation batch and *overwrites* its running
    statistics with them, so evaluating also changes the model. Left in eval mode
    for training (``model.eval()`` inside the training loop, never undone), the
    following steps train without dropout and with frozen batch-norm statistics.
    Neither raises an error.

    The finding stands when the model has no dropout or batch norm today: layers
    get added later, and eval mode is the contract evaluation code relies on. The
    message says which it is: the model's dropout or batch norm when it has them, "harmless
    today" when its class (defined in the file, nested submodules included) or its
    ``nn.Sequential`` of torch layers has neither, and "any dropout/batch norm" when
    its layers are not known (a model from elsewhere).

    Evaluation is found as for ML002: evaluation functions, loops over validation or
    test data (``val_loader``, ``testloader``), module-level test code after training,
    a model's own ``predict()`` (``self(x)``, ``self.forward(x)``; its fix is offered
    as unsafe, since ``self.eval()`` stays after it returns), and models run through
    ``model.forward(x)`` or an inference-named method (``model.predict_step(x)``), or
    HF ``model.generate(...)`` (which runs the model in the mode it is in) on a model
    known as one (``from_pretrained``, a module class), not guessed from its name.
    An explicit ``model.train()`` before the evaluation is reported too.

    Periodic evaluation inside the training loop (``if step % 100 == 0:`` with a batch
    from the validation loader, or fetched by naming its split: ``get_batch("val")``) is
    evaluation like any other. So is a call of one epoch function for training and
    evaluation with its training flag off, so that no backward pass runs
    (``run_epoch(model, val_loader, opt, False)``, ``self._epoch(self.val_loader)`` with
    ``train=False`` by default, ``run_epoch(model, val_loader)`` for ``if optimizer is not
    None:``): the model is
    evaluated in the mode the function leaves it in with that flag (``if train:
    model.train() else: model.eval()``, ``model.train(train)``), else in the mode the
    caller left it in; reported at that call. A helper whose effect depends on a constant
    argument (``set_mode("eval", [model])``) counts as what it does with that argument.

When the code is fine
    - ``model.eval()`` (or ``model.train(False)``) on that model runs on every path
      to the evaluation: in the function, in a helper called before it, or in every
      caller before the call (a different model's ``eval()`` does not count); an
      object built from the model holds it (``trainer = Trainer(model)`` with
      ``self.model = model`` in ``__init__``), so ``model.eval()`` before
      ``trainer.evaluate()`` counts for ``self.model``;
    - a context manager that switches the model to eval mode and back
      (``with evaluating(model):``); an unknown context manager around the
      evaluation may do so too, and the rule stays silent;
    - ``model.train()`` runs in the training loop after the evaluation (or at the
      start of each training step), or the evaluation helper restores the mode;
    - the model comes from ``from_pretrained`` (which returns it in eval mode) and
      is never switched to training mode;
    - frameworks switch modes themselves: Lightning hooks, HF ``Trainer`` and
      skorch ``NeuralNet`` subclasses;
    - the model's class overrides ``train()``/``eval()`` with a meaning of its own;
    - a frozen teacher or target network used inside the training step (its
      output feeds the loss: that is training code);
    - ``model.train()`` inside the evaluation itself where the code shows why: the
      forward repeated over the same input (Monte Carlo dropout: a comprehension or a
      ``for _ in range(n)`` loop), or a detection model called with targets whose
      result is named for losses; and generation or sampling functions (a GAN's
      samples are often drawn in training mode on purpose);
    - ``.eval()`` applied through a loop over a tuple, list or dict of models
      reaches each of them; a type check (``if isinstance(net, nn.Module):
      net.train()``) does not make a switch conditional;
    - a shape check of a freshly built model (not trained or loaded before it
      runs: later training does not count; or run on ``torch.randn`` input);
      objects that are not torch models (Pyro models and guides wrapped by
      ``poutine``, a filter's ``predict`` step other code builds on);
    - a method that a base class defined elsewhere may call (template methods such
      as ``_valid_epoch``), for a model it receives as an argument;
    - what the code shows is no module, so it has no mode: a name holding a plain
      function of the file (``net = linreg``, also ``net, loss = linreg,
      squared_loss``), the negative branch of ``isinstance(net, nn.Module)``, a call
      that hands the mode over (``net(X, is_training=False)``) on something not known
      to be a module; a helper every caller hands ``model.eval()`` (``test(model.eval(),
      loader)``, in other files too).

    Also reported, at the call: a model that this code switched to training mode
    (``model.train()`` on every path here) handed to an evaluation function of another
    file of the project (named for evaluation) that runs it without ``.eval()``
    (``test_semseg(model, test_loader)`` after the epoch); no fix (``model.eval()``
    before the call, or pass ``model.eval()``).

How to fix
    Call ``model.eval()`` before evaluating and ``model.train()`` before training
    again. ``--fix`` inserts ``model.eval()`` at the start of the evaluation
    function (or before the evaluation loop), and ``model.train()`` at the start of
    the training step when an evaluation inside the training loop leaves the model
    in eval mode. Around a call of a shared training/evaluation function with its flag
    off, it inserts ``model.eval()`` before the call and ``model.train()`` after it (the
    function trains in whatever mode it is given); none when the function itself switches
    the model to training mode.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, List, Optional, Set, Tuple

import libcst as cst

from mllint.findings import Applicability, Example, Finding, Fix
from mllint.semantics.model import ANY, CALL, FORWARD, MODULE_SCOPE, Effect, FileModel, translate
from mllint.semantics.layers import BATCH_NORM, DROPOUT, mode_layers
from mllint.semantics.names import after_docstring, dotted, ref_of, shorten
from mllint.semantics.roles import MODEL
from mllint.semantics.phases import Evidence, NotUndone, Phases, eval_name_strength, related
from mllint.semantics.phases.words import evaluation_possible, load_possible, name_tokens, torch_file_possible

CODE = "ML005"
NAME = "missing-eval-mode"
MESSAGE = "model evaluated in training mode, or left in eval mode for training"
TRIGGERS = ("eval", "val", "test", "predict", "infer", "generat", "sampl", "score", "load", "pretrained", "weights", "backward", "dev")
REQUIRES = ("torch|transformers|accelerate|lightning|timm",)  # a transformers or accelerate loop need not import torch
DEFAULT_ENABLED = True
FRAMEWORK = "torch"  # left out for files of another framework (mllint/frameworks.py)
FIX = "safe"


def SCREEN(facts) -> bool:
    # Sound: check() needs a torch file and either a forward with evidence of evaluation or a
    # ``.eval()`` left in a training loop; both come only from names, weight loads and mode
    # switches (words.evaluation_possible); or a call turning off the training flag of a shared
    # epoch function (_flag_evaluations), which needs a backward pass under that flag (a
    # BACKWARD effect), as ML002's shared-epoch report does.
    # _project_evaluations: a model switched by a ``.train()`` call of this file handed to a
    # function of another file named for evaluation.
    # wrapper_evidence: a weights load (anywhere) and a forward under no_grad in a class.
    return torch_file_possible(facts) and (
        evaluation_possible(facts) or not facts.call_names.isdisjoint({"backward", "manual_backward"})
        or ("train" in facts.call_names and any(eval_name_strength(n) == "strong" for n in facts.call_names))
        or facts.has_class and not facts.identifiers.isdisjoint(_GRAD_OFF_CALLS) and load_possible(facts)
    )


_GRAD_OFF_CALLS = frozenset({"no_grad", "inference_mode", "set_grad_enabled"})


def check(model: FileModel) -> Iterable[Finding]:
    phases = Phases.of(model)
    if not phases.torch_file:
        return
    reported: Set[Tuple] = set()
    evaluated: Set[cst.CSTNode] = set()  # forwards reported as evaluations
    # HF generate() runs in the model's mode; a helper shared with training runs the forward
    # for evaluation code that calls it (reported at the call)
    through_helpers = _helper_forwards(model, phases)
    helper_ids = {id(e) for e in through_helpers}
    for effect in phases.forwards() + phases.generate_calls() + through_helpers:
        evidence = phases.evidence(effect)
        if evidence is None or _generating(model, effect.ctx.scope):
            continue  # generating or sampling (a GAN's samples in training mode) is not evaluating
        if evidence.weak and not (evidence.function and _used_after_training(phases, evidence.function)):
            continue  # ``translate()``/``score()``: evaluation once the model it runs has been trained
        if phases.no_module_here(effect):
            continue  # a plain function (``net = linreg``, the else of ``isinstance(net, nn.Module)``): no mode
        if _layerless_wrapper_of_a_model(model, phases, effect):
            continue  # ``vi(vae, x)``: a loss module of this file without layers, handed the model
        if _wraps_only_switched_models(model, phases, effect):
            continue  # ``elbo = SVI(model)``, ``model.eval()``, ``elbo(x)``: its only layers are in eval mode
        ref = effect.ref
        scope = effect.ctx.scope
        if phases.overrides_mode(ref, scope) or phases.mode_cm_around(effect.ctx, ref):
            continue
        modes = phases.mode_at(effect, ref)
        if "maybe" in modes or not (modes - {"eval", "eval_initial"}):
            continue
        if id(effect) in helper_ids and modes != {"train"}:
            continue  # through a helper: only a model the code puts in training mode
        if _deliberate_train(phases, effect, evidence):
            continue
        if modes <= {"train", "none"} and _repeated_sampling(phases, effect) and _same_input_each_round(phases, effect):
            continue  # a model left in training mode, run again and again on one input: Monte Carlo sampling
        unit = (model.canonical(ref, scope), evidence.kind, evidence.function, id(evidence.loop.node) if evidence.loop else None)
        if evidence.kind in ("data", "mode"):
            unit = unit + (id(effect.ctx.statement),)
        if unit in reported:
            continue
        reported.add(unit)
        evaluated.add(effect.node)
        why = (
            f"`{ref}.train()` before it puts it there" if _explicit_train(phases, effect)
            else f"nothing calls `{ref}.eval()` on the way here"
        )
        layers = mode_layers(model, ref, scope)
        message, consequence = _evaluated_message(shorten(ref), evidence.brief, layers)
        detail = f"`{ref}` is evaluated {evidence.text} in training mode: {why}. {consequence}"
        fix = _missing_fix(model, phases, effect, evidence)
        if fix is not None and evidence.function in phases.engine_functions():
            # an engine's process function: when the engines run (event handlers between
            # epochs) is not in the code, so whether training switches back is not either
            fix = dataclasses.replace(fix, applicability=Applicability.UNSAFE)
        if fix is not None and ref == "self":
            # A model's own predict(): ``self.eval()`` there sticks after it returns, and a
            # caller we cannot see (a training loop logging predictions) may rely on train mode.
            fix = dataclasses.replace(fix, applicability=Applicability.UNSAFE)
        yield model.finding(effect.node, CODE, NAME, message, fix, detail, basis=evidence.basis)
    yield from _flag_evaluations(model, phases, evaluated)
    yield from _project_evaluations(model, phases)
    for item in phases.eval_not_undone():
        where = "in the training loop"
        brief = where
        if item.event.via:
            callee = (item.event.via[0].callee or "").rsplit(".", 1)[-1]
            where = f"in `{callee}()`, called from the training loop"
            brief = f"in `{shorten(callee, 24)}()`"
        elif _project_helper(model, item.event.node):
            # a helper of another file of the project switches it (the event is the call)
            callee = dotted(item.event.node.func).rsplit(".", 1)[-1]
            defined = model.project.where(model.imports.qualname(item.event.node.func))
            where = f"in `{callee}()` ({defined}), called from the training loop"
            brief = f"in `{shorten(callee, 24)}()`"
        layers = mode_layers(model, item.ref, item.event.ctx.scope)
        message, consequence = _undone_message(shorten(item.ref), brief, layers)
        detail = (
            f"`{item.ref}` is switched to eval mode {where} and nothing switches it back before the next training "
            f"step. {consequence} Call `{item.ref}.train()` at the start of the training step."
        )
        yield model.finding(item.event.node, CODE, NAME, message, _undone_fix(phases, item), detail,
                            basis="structure")


def _helper_forwards(model: FileModel, phases: Phases) -> List[Effect]:
    """Forwards that evaluation code runs through a helper of this file which is not itself
    evaluation code (``output, loss = self._forward_pass(x, y)`` in ``validate()``, where the
    training step calls the same helper): one forward per model the helper runs, at the call,
    in the caller's terms. Left out: helpers that backpropagate (a shared epoch function: see
    ``_flag_evaluations``) or switch a mode themselves (the mode inside is theirs), and calls
    that are a forward already (``model.forward(x)``)."""
    forward_sites = {e.node for e in phases.forwards()}
    out: List[Effect] = []
    for effect in model.effects:
        callee = effect.callee
        if effect.kind != CALL or not callee or effect.node in forward_sites or not isinstance(effect.node, cst.Call):
            continue
        summary = model.summaries.get(callee)
        if summary is None or not summary.forwards or summary.evals or summary.trains or summary.backward_sites:
            continue
        if phases.trains(callee) or phases.function_evidence(callee) is not None or phases.events(callee):
            continue  # a training step, or evaluation code whose own forward is judged
        fn = model.functions.get(callee)
        if fn is not None and fn.cls is not None and phases.module_like(fn.cls):
            continue  # a method of a model, or of a class with a forward of its own (an ensemble
            # wrapper): the modes of its parts are its business (``agent.pi(x)``, ``ens.forward(x)``)
        mapping = effect.args or {}
        for ref in _outermost(summary.forwards):
            head = ref.split(".", 1)[0].split("[", 1)[0]
            if fn is not None and head in fn.params and head not in mapping:
                continue  # a parameter the call leaves at its default
            translated = translate(ref, mapping)
            if translated == ANY or not phases._is_model_call(translated, effect.ctx.scope):
                continue
            out.append(Effect(FORWARD, translated, effect.node, effect.ctx, effect.order))
    return out


def _outermost(refs) -> List[str]:
    """The references of `refs` that are no submodule of another (``net`` runs ``net.linear_1``
    when it runs: one model, one finding at the call)."""
    return [ref for ref in sorted(refs) if not any(ref.startswith(other + ".") for other in refs if other != ref)]


def _layerless_wrapper_of_a_model(model: FileModel, phases: Phases, effect: Effect) -> bool:
    """A call of an instance of a module class of this file whose ``__init__`` only keeps
    plain values (``self.beta = beta`` with ``beta: float = 1.``), handed a model as an
    argument (``loss, stats, out = vi(vae, x)``): an inference or loss wrapper without
    layers, whose own mode does nothing; the model it runs is judged at its own forward."""
    node = effect.node
    if not isinstance(node, cst.Call) or not node.args:
        return False
    scope = effect.ctx.scope
    cls = model.instance_of.get(scope, effect.ref)
    init = model.method_key(cls, "__init__") if cls else None
    if init is None or init not in model.functions:
        return False
    params = {p.name.value: p for p in model.functions[init].node.params.params}

    def plain(value: cst.BaseExpression) -> bool:
        if isinstance(value, (cst.Integer, cst.Float, cst.SimpleString)) or (
                isinstance(value, cst.Name) and value.value in ("True", "False", "None")):
            return True
        param = params.get(value.value) if isinstance(value, cst.Name) else None
        if param is None:
            return False
        annotation = dotted(param.annotation.annotation) if param.annotation is not None else None
        return annotation in ("int", "float", "str", "bool") or (param.default is not None and plain(param.default))

    for targets, value, ctx in model.assignments:
        if ctx.scope == init and any(t.startswith("self.") for t in targets) and not plain(value):
            return False  # a submodule built or handed in (or something we cannot tell)
    return any(model.has_role(ref_of(a.value) or "", MODEL, scope, by_name=False) for a in node.args if a.keyword is None)


def _wraps_only_switched_models(model: FileModel, phases: Phases, effect: Effect) -> bool:
    """A forward of a module built once from models (``elbo = SVI(model, likelihood=bce)``)
    whose class (of the project) builds no mode-dependent layer itself: every layer it runs
    is one of the models it was handed (``self.model = model``), so it runs in their modes,
    whatever its own. True when each model handed to it is in eval mode at the forward
    (``model.eval()`` before the validation loop that calls ``elbo(x, y)``)."""
    project = model.project
    ref, scope = effect.ref, effect.ctx.scope
    if project is None or ref != ref.split(".", 1)[0]:
        return False
    where = scope if model.assigns_locally(scope, ref) else MODULE_SCOPE
    built = [value for targets, value, ctx in model.assignments if ctx.scope == where and targets == (ref,)]
    if len(built) != 1 or not isinstance(built[0], cst.Call):
        return False
    call = built[0]
    written = dotted(call.func)
    if not written or project.own_mode_layers(written) != frozenset():
        return False
    handed = [ref_of(a.value) for a in call.args if not a.star]
    models = [r for r in handed if r and model.has_role(r, MODEL, where)]
    if not models:
        return False
    for held in models:
        modes = phases.mode_at(Effect(FORWARD, held, effect.node, effect.ctx, effect.order), held)
        if not modes or modes - {"eval", "eval_initial"}:
            return False
    return True


def _same_loop_later(ctx, event) -> bool:
    """An event after the call in a loop around both: it runs before the call's next round
    (``evaluate_model(self, val)`` then ``self.train()`` in the batch loop)."""
    loop = ctx.loop
    while loop is not None:
        if loop.encloses(event.ctx.loop):
            return True
        loop = loop.parent
    return False


def _project_evaluations(model: FileModel, phases: Phases) -> Iterable[Finding]:
    """A model in training mode (a ``.train()`` on every path here) handed to an evaluation
    function of another file of the project (named for evaluation) that runs it without switching it to eval mode (``test_semseg(model, test_loader)`` after the
    training epoch, ``utils.test_semseg`` never calling ``model.eval()``): the evaluation runs
    in training mode because of this call. Reported at the call (the fix is the caller's:
    ``model.eval()`` before it, or ``helper(model.eval(), ...)``)."""
    project = model.project
    if project is None:
        return
    for call, ctx in model.calls:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("eval", "train"):
            continue
        qual = model.imports.qualname(func)
        found = project.function_defined(qual) if qual else None
        if found is None:
            continue
        rel, fn = found
        if "." in fn.key or fn.backward or fn.steps:
            continue
        name = fn.key
        if eval_name_strength(name) != "strong":
            continue
        if any(isinstance(a.value, cst.Call) and isinstance(a.value.func, cst.Attribute)
               and a.value.func.attr.value in ("eval", "train") for a in call.args):
            continue
        positional = [a for a in call.args if a.keyword is None]
        if any(a.star for a in call.args):
            continue
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        for index, param in enumerate(fn.params):
            if param not in fn.forwards or param in fn.evals or param in fn.trains:
                continue
            expr = keywords.get(param, positional[index].value if index < len(positional) else None)
            ref = dotted(expr) if expr is not None else None
            if not ref:
                continue
            effect = Effect(CALL, ref, call, ctx, model.call_order.get(call, 0))
            if phases.overrides_mode(ref, ctx.scope) or phases.mode_cm_around(ctx, ref):
                continue
            modes = phases.mode_at(effect, ref)
            # ("none" as well: the first round in whatever mode the caller left it, every later
            # round after the loop's own ``.train()``)
            if "train" not in modes or modes - {"train", "none"}:
                continue
            if not any(e.kind == "train" and e.ref == ref and not e.via
                       and (e.order < effect.order or _same_loop_later(ctx, e))
                       and isinstance(e.node, cst.Call) and isinstance(e.node.func, cst.Attribute)
                       and e.node.func.attr.value == "train" for e in phases.events(ctx.scope)):
                continue  # a model switched by its own ``.train()`` here (not a loss function)
            where = f"{rel}:{fn.line}"
            layers = mode_layers(model, ref, ctx.scope)
            message = f"`{shorten(ref, 16)}` is in training mode when handed to `{shorten(name, 20)}()`, which evaluates it"
            detail = (
                f"`{name}()` ({where}) evaluates `{param}` without switching it to eval mode, and this call hands it "
                f"`{ref}` in training mode (`{ref}.train()` runs before it on every path): any dropout/batch norm acts "
                f"as in training. Call `{ref}.eval()` before the call (and `.train()` before the next training step), "
                f"or pass `{ref}.eval()`."
            )
            if layers is not None and not layers:
                detail += " (No dropout or batch norm in the model today.)"
            yield model.finding(call, CODE, NAME, message, None, detail, basis="structure")
            break


def _project_helper(model: FileModel, node) -> bool:
    """Whether `node` is a call of a function defined in another file of the project."""
    if model.project is None or not isinstance(node, cst.Call) or isinstance(node.func, cst.Attribute) \
            and node.func.attr.value in ("eval", "train"):
        return False
    name = model.imports.qualname(node.func)
    return bool(name) and model.project.function_named(name) is not None


def _flag_evaluations(model: FileModel, phases: Phases, evaluated: Set[cst.CSTNode]) -> Iterable[Finding]:
    """One function for training and evaluation called with its training flag off
    (``run_epoch(model, val_loader, optimizer, False)``): an evaluation of the model, in the
    mode the function leaves it in with the flag off, or else in the mode the caller left it
    in. Reported at that call (once per call and model); the fix puts ``model.eval()``
    before the call and ``model.train()`` after it when the caller's mode is the one at
    fault."""
    seen: Set[Tuple] = set()
    for item in phases.flag_evaluations():
        if item.forward.node in evaluated:
            continue
        unit = (item.site.node, model.canonical(item.ref, item.site.ctx.scope))
        if unit in seen:
            continue
        seen.add(unit)
        name = item.function.rsplit(".", 1)[-1]
        value = phases.argument_value(item.function, item.site.node, item.flag)
        setting = f"{item.flag}={model.code_of(value)}" if value is not None else f"{item.flag} off"
        where = f"in `{shorten(name, 20)}({shorten(setting, 20)})`"
        layers = mode_layers(model, item.ref, item.site.ctx.scope)
        message, consequence = _evaluated_message(shorten(item.ref), where, layers)
        if item.in_function:
            why = f"`{name}()` switches it to training mode also with `{setting}`"
            fix = None
        else:
            why = f"nothing calls `{item.ref}.eval()` before this call, and `{name}()` does not with `{setting}`"
            fix = _flag_fix(model, phases, item)
        detail = f"`{item.ref}` is evaluated by `{name}()` with `{setting}` in training mode: {why}. {consequence}"
        yield model.finding(item.site.node, CODE, NAME, message, fix, detail, basis="structure")


def _flag_fix(model: FileModel, phases: Phases, item) -> Optional[Fix]:
    """``model.eval()`` before the call that evaluates and ``model.train()`` right after it:
    the model was in training mode before the call (that is the finding), and the same
    function trains it when called with the flag on, without switching it back itself, so the
    mode is restored for whatever training comes next (in this file or another)."""
    site = item.site
    statement = site.ctx.statement
    if not isinstance(statement, cst.SimpleStatementLine) or any(isinstance(s, cst.Return) for s in statement.body):
        return None
    if not phases.valid_at(item.ref, site.ctx.scope, statement, None):
        return None
    target = phases.outside_withs(statement, site.ctx.withs)
    block = phases.block_of(target)
    before, after = _statement(f"{item.ref}.eval()"), _statement(f"{item.ref}.train()")
    if block is None or before is None or after is None:
        return None
    body = []
    for node in block.body:
        if node is target:
            body.append(before.with_changes(leading_lines=node.leading_lines))
            body.append(node.with_changes(leading_lines=()))
            body.append(after)
        else:
            body.append(node)
    return model.fix_replacing(
        block, block.with_changes(body=body), Applicability.SAFE,
        f"Insert `{item.ref}.eval()` before the evaluation and `{item.ref}.train()` after it",
    )


_STANDS = ("The finding stands: layers get added later, and evaluation code relies on eval mode.")


def _kinds(layers) -> str:
    names = [k for k in (DROPOUT, BATCH_NORM) if k in layers] or ["code that reads `self.training`"]
    return " and ".join(names)


def _evaluated_message(ref: str, where: str, layers) -> Tuple[str, str]:
    """The message for a model evaluated in training mode, true to what the model has:
    ``layers`` from semantics.layers.mode_layers (a set of kinds, empty = none, None = unknown)."""
    head = f"`{ref}` evaluated {where} in training mode"
    if layers is None:
        return (f"{head}: any dropout/batch norm acts as in training",
                "Dropout, if the model has any, zeroes random activations, and batch norm normalises with the "
                "batch's statistics and overwrites its running statistics; call `.eval()` before evaluating.")
    if not layers:
        return (f"{head} (harmless today: no dropout or batch norm)",
                "Its layers behave the same in both modes today. " + _STANDS)
    kinds = _kinds(layers)
    verb = "acts" if kinds in (DROPOUT, BATCH_NORM) else "act"
    effects = []
    if DROPOUT in layers:
        effects.append("dropout zeroes random activations, so outputs change from call to call")
    if BATCH_NORM in layers:
        effects.append("batch norm normalises with the batch's statistics and overwrites its running statistics")
    if not effects:
        effects.append("code that reads `self.training` takes its training branch")
    return (f"{head}: its {kinds} {verb} as in training",
            f"In training mode {'; '.join(effects)}. Call `.eval()` before evaluating.")


def _undone_message(ref: str, where: str, layers) -> Tuple[str, str]:
    head = f"`{ref}` switched to eval mode {where} and never back"
    if layers is None:
        return (f"{head}: training goes on in eval mode",
                "The following training steps run in eval mode: dropout, if any, is off and batch-norm statistics, "
                "if any, are frozen.")
    if not layers:
        return (f"{head} (harmless today: no dropout or batch norm)",
                "Its layers behave the same in both modes today. " + _STANDS)
    return (f"{head}: training goes on without its {_kinds(layers)}",
            f"The following training steps run in eval mode: the model's {_kinds(layers)} behave as in evaluation "
            f"(no dropout, frozen batch-norm statistics).")


_GENERATING_WORDS = frozenset("generate generation generating sample samples sampling sampler".split())


def _generating(model: FileModel, scope: str) -> bool:
    """Code in a function named for generating or sampling (``sample_images``), where
    training-mode dropout and batch norm are often wanted."""
    fn = model.functions.get(scope)
    return fn is not None and eval_name_strength(fn.node.name.value) == "weak" and bool(
        _GENERATING_WORDS.intersection(name_tokens(fn.node.name.value)))


def _used_after_training(phases: Phases, key: str, depth: int = 0) -> bool:
    """Whether every call of function `key` in the file runs after training (a backward, a step,
    a training helper earlier in its scope), itself or through the functions that call it
    (``score()`` calling ``translate()``, called after ``train()``): structure that makes a
    ``translate``/``decode``/``score`` function the trained model's evaluation."""
    sites = phases.call_sites(key)
    if not sites or depth > 2:
        return False
    return all(phases.trained_before(site) or (
        site.ctx.scope in phases.m.functions and _used_after_training(phases, site.ctx.scope, depth + 1)) for site in sites)


def _deliberate_train(phases: Phases, effect: Effect, evidence: Evidence) -> bool:
    """``model.train()`` inside the evaluation itself (the evaluation function, or the body
    of the evaluation loop) when the code shows why: Monte Carlo dropout (the forward
    repeated over the same input: in a ``range`` loop or a comprehension of its own) or a
    detection model that returns its losses only in training mode (called with targets, its
    result named for losses). Otherwise an explicit ``.train()`` before evaluation is the bug."""
    if not _explicit_train(phases, effect):
        return False
    return _repeated_sampling(phases, effect) or _losses_with_targets(phases, effect)


def _explicit_train(phases: Phases, effect: Effect) -> bool:
    """A ``.train()`` on the model in the evaluation's own code, the last switch before the forward."""
    before = [
        e for e in phases.events(effect.ctx.scope)
        if e.order < effect.order and not e.via and related(e.ref, effect.ref) and e.kind in ("train", "eval")
    ]
    return bool(before) and before[-1].kind == "train"


def _repeated_sampling(phases: Phases, effect: Effect) -> bool:
    """The forward repeated over the same input: inside a comprehension, or a ``for _ in
    range(n)`` loop (a loop over a count, not over data)."""
    statement = effect.ctx.statement
    if statement is not None and _in_comprehension(phases.m, effect.node, statement):
        return True
    loop = effect.ctx.loop
    while loop is not None and phases.iterated_data(loop) is None and not phases.loop_backprops(loop):
        # (a training loop over ``range(max_iters)`` is not sampling one input again and again)
        if loop.iter_call == "range" and isinstance(loop.node, cst.For):
            return True
        loop = loop.parent
    return False


def _same_input_each_round(phases: Phases, effect: Effect) -> bool:
    """Whether the forward's arguments read nothing that changes from one round of the count
    loop (or comprehension) around it to the next: not the loop's or comprehension's variables,
    nor a name the loop body binds (``for i in range(n): x = data[i]`` is a loop over data)."""
    node = effect.node
    if not isinstance(node, cst.Call) or not node.args:
        return False
    m = phases.m

    def names_in(expr: cst.CSTNode) -> Set[str]:
        found = {n.value for n in m.index.nodes(cst.Name, expr)}  # (strictly under `expr`)
        return found | {expr.value} if isinstance(expr, cst.Name) else found

    names = set().union(*(names_in(a.value) for a in node.args))
    varying: Set[str] = set()
    for ancestor in m.parents.ancestors(node):
        if isinstance(ancestor, (cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp)):
            comp = ancestor.for_in
            while comp is not None:
                varying |= names_in(comp.target)
                comp = comp.inner_for_in
        if ancestor is effect.ctx.statement:
            break
    loop = effect.ctx.loop
    while loop is not None:
        varying |= set(loop.targets)
        body = getattr(loop.node, "body", None)
        if body is not None:
            for target in m.index.nodes((cst.AssignTarget, cst.AugAssign, cst.AnnAssign), body):
                varying |= names_in(target.target)
        if loop.iter_call == "range":
            break
        loop = loop.parent
    return bool(names) and not names & varying


def _in_comprehension(model: FileModel, node: cst.CSTNode, statement: cst.CSTNode) -> bool:
    """Whether ``node`` sits in a list comprehension or generator expression of ``statement``."""
    for ancestor in model.parents.ancestors(node):
        if isinstance(ancestor, (cst.ListComp, cst.GeneratorExp)):
            return True
        if ancestor is statement:
            return False
    return False


def _losses_with_targets(phases: Phases, effect: Effect) -> bool:
    """``loss_dict = model(images, targets)``: torchvision's detection models return their
    losses only in training mode."""
    node = effect.node
    if not isinstance(node, cst.Call) or len(node.args) < 2:
        return False
    statement = effect.ctx.statement
    if isinstance(statement, cst.SimpleStatementLine):
        for small in statement.body:
            if isinstance(small, cst.Assign) and small.value is node:
                names = []
                for t in small.targets:
                    # ``logits, loss = model(x, y)`` (nanoGPT) returns its loss in every mode: each
                    # value unpacked must be named for losses
                    if isinstance(t.target, (cst.Tuple, cst.List)):
                        names.extend(e.value for e in t.target.elements)
                    else:
                        names.append(t.target)
                return bool(names) and all("loss" in (phases.m.code_of(t) or "").lower() for t in names)
    return False


# --- fixes --------------------------------------------------------------------------------------------------


def _statement(text: str) -> Optional[cst.SimpleStatementLine]:
    try:
        node = cst.parse_statement(text + "\n")
    except Exception:
        return None
    return node if isinstance(node, cst.SimpleStatementLine) else None


def _replace(model: FileModel, old: cst.CSTNode, new: cst.CSTNode) -> Optional[cst.Module]:
    try:
        return model.replaced(old, new)
    except Exception:
        return None


Change = Tuple[cst.CSTNode, cst.CSTNode]  # (old, new): a node and what replaces it


def _insert_at_top(suite: cst.CSTNode, text: str) -> Optional[Change]:
    """``text`` as the first statement of an indented block (after a docstring)."""
    statement = _statement(text)
    if statement is None or not isinstance(suite, cst.IndentedBlock):
        return None
    body = list(suite.body)
    start = after_docstring(body)
    body.insert(start, statement)
    return suite, suite.with_changes(body=body)


def _insert_before(phases: Phases, statement_node: cst.CSTNode, text: str) -> Optional[Change]:
    statement = _statement(text)
    block = phases.block_of(statement_node)
    if statement is None or block is None:
        return None
    body = []
    for item in block.body:
        if item is statement_node:
            body.append(statement.with_changes(leading_lines=item.leading_lines))
            body.append(item.with_changes(leading_lines=()))
        else:
            body.append(item)
    return block, block.with_changes(body=body)


def _train_insertion(phases: Phases, item: NotUndone) -> Optional[Change]:
    if not phases.valid_at(item.ref, item.loop.scope, item.loop.node, item.loop) and not _bound_by_loop(item):
        return None
    return _insert_at_top(item.loop.body, f"{item.ref}.train()")


def _bound_by_loop(item: NotUndone) -> bool:
    head = item.ref.split(".", 1)[0].split("[", 1)[0]
    loop = item.loop
    while loop is not None:
        if head in loop.targets:
            return True
        loop = loop.parent
    return False


def _undone_fix(phases: Phases, item: NotUndone) -> Optional[Fix]:
    change = _train_insertion(phases, item)
    if change is None:
        return None
    return phases.m.fix_replacing(*change, Applicability.SAFE, f"Insert `{item.ref}.train()` at the start of the training step")


def _outermost_eval_loop(phases: Phases, effect: Effect):
    found = None
    loop = effect.ctx.loop
    while loop is not None and not phases.loop_backprops(loop):
        found = loop
        loop = loop.parent
    return found


def _missing_fix(model: FileModel, phases: Phases, effect: Effect, evidence: Evidence) -> Optional[Fix]:
    ref = effect.ref
    scope = effect.ctx.scope
    text = f"{ref}.eval()"
    switched_before = any(
        e.order < effect.order and related(e.ref, ref) and e.kind in ("train", "maybe") for e in phases.events(scope)
    )
    change: Optional[Change] = None
    if evidence.kind in ("function", "callers") and scope != MODULE_SCOPE and not switched_before:
        fn = model.functions[scope]
        if phases.valid_at(ref, scope):
            change = _insert_at_top(fn.node.body, text)
        elif not effect.ctx.conds:
            # a parameter the function rebinds to the model (``model = build(model)``): right
            # before the evaluation, where the name holds the model
            loop = _outermost_eval_loop(phases, effect)
            target = loop.node if loop is not None else effect.ctx.statement
            if target is not None and phases.valid_at(ref, scope, target, loop):
                change = _insert_before(phases, phases.outside_withs(target, effect.ctx.withs), text)
    elif evidence.kind == "loop" and evidence.loop is not None:
        target = phases.outside_withs(evidence.loop.node, effect.ctx.withs)
        if phases.valid_at(ref, scope, evidence.loop.node, evidence.loop):
            change = _insert_before(phases, target, text)
    else:
        loop = _outermost_eval_loop(phases, effect)
        target = loop.node if loop is not None else effect.ctx.statement
        if target is not None and phases.valid_at(ref, scope, target, loop):
            change = _insert_before(phases, phases.outside_withs(target, effect.ctx.withs), text)
    if change is None:
        return None
    description = f"Insert `{text}` before the evaluation"
    if scope != MODULE_SCOPE and phases.training_callers_elsewhere(scope):
        # Callers in other files go on training after this returns: the inserted eval() would
        # stay for their training steps (the other file is not changed by this fix).
        where = ", ".join(phases.training_callers_elsewhere(scope)[:3])
        return model.fix_replacing(*change, Applicability.UNSAFE,
                                   f"{description} (unsafe: called from a training loop at {where} that never "
                                   f"calls `.train()`; switch the model back there)")
    if not phases.file_trains():
        return model.fix_replacing(*change, Applicability.SAFE, description)

    def build() -> Optional[Fix]:  # re-analyses the fixed file: only when the fix is asked for
        module = _restore_training(phases, _replace(model, *change))
        return None if module is None else model.fix_from_module(module, Applicability.SAFE, description)

    return model.deferred_fix(Applicability.SAFE, description, build)


def _restore_training(phases: Phases, module: Optional[cst.Module]) -> Optional[cst.Module]:
    """When the inserted ``eval()`` lands in a training loop (directly or through the
    evaluation function it calls), also switch the model back at the start of the
    training step, so the fix does not leave the model in eval mode for training."""
    if module is None:
        return None
    from mllint.semantics import build_model

    before = len(phases.eval_not_undone())
    for _ in range(4):
        try:  # the changed tree itself: nothing to re-parse
            new_model = build_model(module, module.code, phases.m.path)
        except Exception:
            return None
        new_phases = Phases.of(new_model)
        items = new_phases.eval_not_undone()
        if len(items) <= before:
            return module
        known = {phases.m.code_of(i.event.node) + "|" + i.ref for i in phases.eval_not_undone()}
        fresh = [i for i in items if new_phases.m.code_of(i.event.node) + "|" + i.ref not in known] or items
        change = _train_insertion(new_phases, fresh[0])
        if change is None:
            return None
        module = _replace(new_model, *change)
    return None


# ---------------------------------------------------------------------------------------
# Examples (collected by the test suite). INVALID examples carry the expected --fix output.


VALID: List[str] = [
    # a class that loads a teacher and trains a student with it: training code, not a wrapper
    # for inference (whether the teacher should be in eval mode is the training step's business)
    """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.Dropout(0.1))

    def forward(self, x):
        return self.body(x)



class Teacher:
    def __init__(self, weights, student):
        self.model = Net()
        self.model.load_state_dict(torch.load(weights))
        self.student = student
        self.opt = torch.optim.SGD(student.parameters(), lr=0.1)

    def step(self, x):
        with torch.no_grad():
            target = self.model(x)
        loss = ((self.student(x) - target) ** 2).mean()
        loss.backward()
        self.opt.step()
""",
    # Monte Carlo dropout with the model left in training mode: the same input, again and again
    """
import numpy as np
import torch
from torch import nn

model = nn.Sequential(nn.Linear(1, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 1))
opt = torch.optim.Adam(model.parameters())
for epoch in range(100):
    for xb, yb in train_loader:
        loss = ((model(xb) - yb) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

x_test = torch.linspace(-3, 3, 100).unsqueeze(1)
with torch.no_grad():
    samples = np.hstack([model(x_test).numpy() for _ in range(100)])
print(samples.mean(1), samples.std(1))
""",
    # ... and a model's own sampling method: the forward repeated on one input
    """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.fc(self.drop(x))

    def sample_predict(self, x, n):
        predictions = x.new_zeros(n, x.shape[0], 2)
        for i in range(n):
            predictions[i] = self.forward(x)
        return predictions
""",
    # a target network run under no_grad inside the training loop: a piece of the training step
    """
import torch
from torch import nn

policy = nn.Sequential(nn.Linear(4, 64), nn.Dropout(0.1), nn.Linear(64, 2))
target = nn.Sequential(nn.Linear(4, 64), nn.Dropout(0.1), nn.Linear(64, 2))
opt = torch.optim.Adam(policy.parameters())
for step in range(1000):
    s, a, r, s2 = replay.sample(32)
    with torch.no_grad():
        best = target(s2).max(1).values
    q = policy(s).gather(1, a)
    loss = ((q.squeeze(1) - (r + 0.99 * best)) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 100 == 0:
        target.load_state_dict(policy.state_dict())
""",
    # the loop variable of ``for model in models`` switched to eval mode before its validation
    # loop: the model the loop's body runs is switched too
    """
import torch


def main(models, labelled, validation):
    for model in models:
        optimizer = torch.optim.Adam(model.parameters())
        for epoch in range(10):
            model.train()
            for x, y in labelled:
                loss = (y - model.classify(x)).mean()
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
            if epoch % 5 == 0:
                model.eval()
                with torch.no_grad():
                    for x, y in validation:
                        print(model.classify(x).argmax(1))
""",
    # evaluation in the last round of the batch loop only (``if i == len(steps) - 1:``), and the
    # epoch loop switches back to training mode before it trains again
    """
import torch
from torch import nn

model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.2), nn.Linear(8, 2))
optimizer = torch.optim.Adam(model.parameters())
epoch = 0
while epoch < 100:
    epoch += 1
    model.train()
    steps = list(enumerate(train_loader))
    for i, (x, y) in steps:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        if i == len(steps) - 1:
            model.eval()
            with torch.no_grad():
                val_loss = nn.functional.cross_entropy(model(x_test), y_test)
            print(epoch, val_loss.item())
""",
    # a notebook that uses torch and TensorFlow: the Keras model its helper predicts with has no
    # torch mode
    """
import torch
import tensorflow as tf

model = tf.keras.Model(inputs=[encoder_inputs, decoder_inputs], outputs=[outputs])
model.fit((X_train, X_train_dec), y_train, epochs=10)


def predict_date_strs(date_strs):
    X = prepare(date_strs)
    return model.predict(X).argmax(-1)


print(predict_date_strs(["July 14, 1789"]))
""",
    # a loss/inference wrapper module of this file that keeps only plain values, handed the
    # model: the model is switched to eval mode; the wrapper has no layers to switch
    """
import torch
from torch import nn


class VariationalInference(nn.Module):
    def __init__(self, beta: float = 1.0):
        super().__init__()
        self.beta = beta

    def forward(self, model, x):
        out = model(x)
        return -(out["log_px"] - self.beta * out["kl"]).mean(), out


vi = VariationalInference(beta=1.0)
vae = VAE()
vae.load_state_dict(torch.load("vae.pt", weights_only=True))
vae.eval()
with torch.no_grad():
    for x, y in test_loader:
        loss, outputs = vi(vae, x)
        print(loss.item())
""",
    # a model the file never binds (left to the reader in a comment, or from a star import):
    # nothing says what mode it is in
    """
import torch

# model = ...  (left to the reader)
with torch.no_grad():
    for x, y in test_loader:
        print(model(x).argmax(1))
""",
    # a model from from_pretrained (eval mode) sampled first; the name is bound again much later
    # to the model that gets trained: the binding that reaches the sample is the pretrained one
    """
import torch
import transformers
import peft

model = transformers.AutoModelForCausalLM.from_pretrained("gpt2")
inputs = tokenizer("The movie", return_tensors="pt")
print(tokenizer.decode(model.generate(**inputs, max_new_tokens=20)[0]))

model = peft.get_peft_model(model, peft.LoraConfig(r=8))
model.train()
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
    # a backbone built with trained weights and fine-tuned in the same file: training, not inference
    """
import torch
from torchvision import models

model = models.resnet18(weights=models.ResNet18_Weights.DEFAULT)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for images, labels in loader:
    loss = torch.nn.functional.cross_entropy(model(images), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
""",
    # built without trained weights (``pretrained=False``), its output only printed: a shape check
    """
import torch
from torchvision import models

def main():
    model = models.resnet18(pretrained=False)
    print(model(torch.randn(2, 3, 224, 224)).shape)
""",
    # the same `translate()` run only on a freshly built model (nothing is trained before it)
    """
import torch
from torch import nn


class Seq2Seq(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.rnn = nn.GRU(hidden, hidden, num_layers=2, dropout=0.3)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        states, _ = self.rnn(self.embed(tokens))
        return self.out(states)


def fit(net, batches):
    opt = torch.optim.Adam(net.parameters())
    for src, tgt in batches:
        opt.zero_grad()
        logits = net(src)
        nn.functional.cross_entropy(logits.flatten(0, 1), tgt.flatten()).backward()
        opt.step()


def translate(net, src):
    with torch.no_grad():
        return net(src).argmax(-1)


net = Seq2Seq(100, 32)
print(translate(net, torch.randint(0, 100, (5, 1))).shape)  # what the untrained model gives
""",
    # a policy's `evaluate()` samples actions whose log-probabilities train it (its caller runs
    # backward on them): a training forward, whatever the method is called
    """
import torch
from torch import nn
from torch.distributions import Normal

device = torch.device("cpu")


class PolicyNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 16), nn.Dropout(0.1))
        self.mean = nn.Linear(16, 1)
        self.log_std = nn.Linear(16, 1)

    def forward(self, state):
        h = self.body(state)
        return self.mean(h), self.log_std(h).clamp(-20, 2)

    def evaluate(self, state):
        mean, log_std = self.forward(state)
        normal = Normal(mean, log_std.exp())
        z = normal.rsample()
        action = torch.tanh(z)
        log_prob = normal.log_prob(z) - torch.log(1 - action.pow(2) + 1e-6)
        return action, log_prob


policy_net = PolicyNetwork().to(device)
policy_optimizer = torch.optim.Adam(policy_net.parameters(), lr=3e-4)


def update(state):
    new_action, log_prob = policy_net.evaluate(state)
    policy_loss = (log_prob - new_action).mean()
    policy_optimizer.zero_grad()
    policy_loss.backward()
    policy_optimizer.step()


for step in range(100):
    update(torch.randn(8, 3))
""",
    # the training helper restores train mode through a local alias of the attribute
    """
import torch
from torch import nn


class Trainer:
    def __init__(self, loader, val_loader):
        self.net = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 2))
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)
        self.loader, self.val_loader = loader, val_loader

    def train_epoch(self):
        model = self.net
        model.train()
        for x, y in self.loader:
            self.opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            self.opt.step()

    def evaluate(self):
        self.net.eval()
        correct = 0
        with torch.no_grad():
            for x, y in self.val_loader:
                correct += (self.net(x).argmax(1) == y).sum().item()
        return correct

    def fit(self, epochs):
        for epoch in range(epochs):
            self.train_epoch()
            print(epoch, self.evaluate())
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
    # eval() at the start of the evaluation function
    """
    import torch

    @torch.no_grad()
    def evaluate(model, loader):
        model.eval()
        return sum((model(x).argmax(1) == y).sum().item() for x, y in loader)
    """,
    # shared train/val loop: the mode follows the phase
    """
    import torch

    def train_model(model, dataloaders, criterion, optimizer, epochs):
        for epoch in range(epochs):
            for phase in ["train", "val"]:
                if phase == "train":
                    model.train()
                else:
                    model.eval()
                for inputs, labels in dataloaders[phase]:
                    optimizer.zero_grad()
                    with torch.set_grad_enabled(phase == "train"):
                        loss = criterion(model(inputs), labels)
                        if phase == "train":
                            loss.backward()
                            optimizer.step()
    """,
    # eval() in the caller before calling the evaluation helper; train() back in the loop
    """
    import torch

    @torch.no_grad()
    def validate(net, val_loader):
        return [net(x) for x, _ in val_loader]

    for epoch in range(10):
        net.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            criterion(net(x), y).backward()
            optimizer.step()
        net.eval()
        validate(net, val_loader)
    """,
    # a frozen teacher set to eval once, before the training loop
    """
    import torch

    teacher.eval()
    student.train()
    for x, y in train_loader:
        optimizer.zero_grad()
        with torch.no_grad():
            soft = teacher(x)
        loss = distill_loss(student(x), soft, y)
        loss.backward()
        optimizer.step()
    """,
    # a context manager defined in the file that switches to eval and back
    """
    import contextlib
    import torch

    @contextlib.contextmanager
    def evaluating(model):
        model.eval()
        try:
            yield model
        finally:
            model.train()

    for epoch in range(epochs):
        for x, y in train_loader:
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            optimizer.step()
        with evaluating(model), torch.no_grad():
            val_out = [model(x) for x, _ in val_loader]
    """,
    # Lightning hooks: the framework switches modes
    """
    import torch
    import pytorch_lightning as pl

    class Lit(pl.LightningModule):
        def test_step(self, batch, batch_idx):
            x, y = batch
            self.log("test_acc", (self.net(x).argmax(1) == y).float().mean())
    """,
    # from_pretrained returns the model in eval mode
    """
    import torch
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
    with torch.no_grad():
        for batch in test_loader:
            logits = model(**batch).logits
    """,
    # the evaluation helper restores training mode itself
    """
    import torch

    def evaluate(model, loader):
        model.eval()
        with torch.no_grad():
            acc = sum((model(x).argmax(1) == y).sum().item() for x, y in loader)
        model.train()
        return acc

    for epoch in range(epochs):
        for x, y in train_loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        evaluate(model, val_loader)
    """,
    # a class that overrides train()/eval() with a meaning of its own
    """
    import torch

    class Agent:
        def train(self, steps):
            ...

        def eval(self):
            ...

    agent = Agent()
    with torch.no_grad():
        for obs in test_episodes:
            agent(obs)
    """,
    # a DQN target network inside the training step: its output feeds the loss
    """
    import torch

    for step in range(num_steps):
        states, actions, rewards, next_states = buffer.sample(64)
        with torch.no_grad():
            target = rewards + gamma * target_net(next_states).max(1)[0]
        q = policy_net(states).gather(1, actions)
        loss = torch.nn.functional.smooth_l1_loss(q, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    """,
    # an unknown context manager around the evaluation may set the mode: stay silent
    """
    import torch
    from utils import eval_mode

    def validate(model, val_loader):
        with eval_mode(model), torch.no_grad():
            return [model(x) for x, _ in val_loader]
    """,
    # eval() set once in __init__, nothing switches the model back
    """
    import torch

    class Predictor:
        def __init__(self, checkpoint):
            self.model = Net()
            self.model.load_state_dict(torch.load(checkpoint))
            self.model.eval()

        @torch.no_grad()
        def predict(self, x):
            return self.model(x).argmax(-1)
    """,
    # GAN samples drawn in training mode on purpose, in a sampling function
    """
    import torch

    @torch.no_grad()
    def sample_images(generator, fixed_noise, path):
        save_image(generator(fixed_noise), path)
    """,
    # a Trainer built from the model holds it (self.model = model): the caller's model.eval() counts
    """
    import torch

    class Trainer:
        def __init__(self, model, optimizer, loss_fn):
            self.model = model
            self.optimizer = optimizer
            self.loss_fn = loss_fn

        def train_epoch(self, loader):
            self.model.train()
            for x, y in loader:
                self.optimizer.zero_grad()
                self.loss_fn(self.model(x), y).backward()
                self.optimizer.step()

        @torch.no_grad()
        def evaluate(self, loader):
            return sum(self.loss_fn(self.model(x), y).item() for x, y in loader)

    def main():
        model = Net()
        trainer = Trainer(model, torch.optim.Adam(model.parameters()), torch.nn.MSELoss())
        for epoch in range(10):
            trainer.train_epoch(train_loader)
            model.eval()
            print(trainer.evaluate(val_loader))
    """,
    # an Evaluator given the model by keyword and moving it to a device; eval() on the model before use
    """
    import torch

    class Evaluator:
        def __init__(self, loader, net, device):
            self.loader = loader
            self.net = net.to(device)

        @torch.no_grad()
        def validate(self):
            return [self.net(x) for x, _ in self.loader]

    model = build_model()
    model.load_state_dict(torch.load("ckpt.pt"))
    evaluator = Evaluator(val_loader, net=model, device="cuda")
    model.eval()
    print(evaluator.validate())
    """,
    # eval() then train() in the same training loop, via train(False) and train(True)
    """
    import torch

    for epoch in range(epochs):
        model.train(True)
        for x, y in train_loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        model.train(False)
        with torch.no_grad():
            for x, y in val_loader:
                model(x)
    """,
    # Monte Carlo dropout: train() before the same input is sampled repeatedly
    """
import torch

@torch.no_grad()
def predict_with_uncertainty(model, x, n=30):
    model.train()
    samples = torch.stack([model(x) for _ in range(n)])
    return samples.mean(0), samples.std(0)
""",
    # Monte Carlo dropout over a loader: a range loop repeats the forward on each batch
    """
import torch

@torch.no_grad()
def evaluate_mc(model, loader, passes=10):
    model.train()
    out = []
    for x, _ in loader:
        probs = 0
        for _ in range(passes):
            probs = probs + model(x).softmax(-1)
        out.append(probs / passes)
    return out
""",
    # torchvision detection models return their losses only in training mode: the validation loss is computed with targets
    """
import torch

@torch.no_grad()
def validation_loss(model, val_loader):
    model.train()
    total = 0.0
    for images, targets in val_loader:
        loss_dict = model(images, targets)
        total += sum(loss.item() for loss in loss_dict.values())
    return total
""",
    # eval() applied to every model through a tuple loop
    """
import torch

@torch.no_grad()
def evaluate(encoder, decoder, loader):
    for m in (encoder, decoder):
        m.eval()
    return [decoder(encoder(x)) for x in loader]
""",
    # eval() applied through a dict of models
    """
import torch

@torch.no_grad()
def evaluate(models, loader):
    for m in models.values():
        m.eval()
    return [models["head"](models["body"](x)) for x in loader]
""",
    # a shape check of a freshly built model
    """
import torch
import torchvision

def test():
    net = torchvision.models.resnet18(num_classes=10)
    print(net(torch.randn(1, 3, 32, 32)).shape)

if __name__ == "__main__":
    test()
""",

    # a Pyro model wrapped by poutine handlers is a function, not an nn.Module
    """
import torch
import pyro
from pyro import poutine
from pyro.infer import infer_discrete

def predict(args, data, samples, continuous_model):
    model = poutine.condition(continuous_model, samples)
    model = infer_discrete(model, first_available_dim=-2)
    with poutine.trace() as tr:
        model(args, data)
    return tr.trace
""",
    # a parity check of a model a local builder makes and initialises deterministically (no training, no weights)
    """
import torch

def build_classifier(n):
    return torch.nn.Sequential(torch.nn.Linear(n, 4), torch.nn.Dropout(0.1))

def compare_classifier(n):
    torch.manual_seed(0)
    x = torch.randn(2, n)
    classifier = build_classifier(n)
    with torch.no_grad():
        out = classifier(x)
    assert out.shape == (2, 4)
""",
    # a model defined here without dropout or batch norm, put in eval mode before evaluating: fine
    """
import torch
import torch.nn as nn

class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, x):
        return self.body(x)

@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    return sum((model(x) - y).abs().sum().item() for x, y in loader)
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
    # a periodic evaluation in the training loop: eval() in the branch, train() after it
    """
    import torch
    import torch.nn.functional as F

    def train(model, optimizer, train_loader, test_loader, eval_every):
        model.train()
        for i, (xb, yb) in enumerate(train_loader):
            optimizer.zero_grad()
            F.cross_entropy(model(xb), yb).backward()
            optimizer.step()
            if i % eval_every == 0:
                model.eval()
                with torch.no_grad():
                    correct = sum((model(tx).argmax(1) == ty).sum().item() for tx, ty in test_loader)
                model.train()
                print(i, correct)
    """,
    # get_batch ignores its split: the "val" batch is training data (no evidence of evaluation)
    """
    import torch

    def get_batch(split):
        ix = torch.randint(len(train_data) - block_size, (batch_size,))
        return torch.stack([train_data[i:i + block_size] for i in ix]), torch.stack([train_data[i + 1:i + 1 + block_size] for i in ix])

    def train(model, optimizer, max_iters, log_every):
        model.train()
        for it in range(max_iters):
            if it % log_every == 0:
                with torch.no_grad():
                    xv, yv = get_batch("val")
                    logits, probe_loss = model(xv, yv)
                print(it, probe_loss.item())
            xb, yb = get_batch("train")
            logits, loss = model(xb, yb)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    """,
    # HF generate() in evaluation, after eval(); generation in a function named for sampling
    # (often wanted in training mode), and generate() on an object that is not a known model
    """
    import torch
    from transformers import AutoModelForSeq2SeqLM
    from vllm import LLM

    model = AutoModelForSeq2SeqLM.from_pretrained("t5-small")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def sample_outputs(lm, batch):
        return lm.generate(batch["input_ids"], do_sample=True)

    for epoch in range(3):
        model.train()
        for batch in train_loader:
            model(**batch).loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        print(sample_outputs(model, next(iter(train_loader))))
        model.eval()
        for batch in val_loader:
            print(model.generate(batch["input_ids"], max_new_tokens=32))

    llm = LLM(model="facebook/opt-125m")
    for batch in test_loader:
        print(llm.generate(batch["prompts"]))
    """,
    # one epoch function for training and validation: the mode follows the flag
    """
    import torch
    import torch.nn.functional as F

    def run_epoch(model, loader, optimizer, is_train):
        if is_train:
            model.train()
        else:
            model.eval()
        total = 0.0
        with torch.set_grad_enabled(is_train):
            for x, y in loader:
                loss = F.cross_entropy(model(x), y)
                if is_train:
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                total += loss.item()
        return total

    def main(model, optimizer, train_loader, val_loader, epochs):
        for epoch in range(epochs):
            run_epoch(model, train_loader, optimizer, True)
            print(epoch, run_epoch(model, val_loader, optimizer, False))
    """,
    # the same with model.train(train) and the flag left at its default for validation
    """
    import torch
    import torch.nn.functional as F

    class Trainer:
        def _epoch(self, loader, train=False):
            self.model.train(train)
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
    # a helper whose effect depends on a constant argument: set_mode("eval", ...) switches
    # every model it is given to eval mode
    """
    import torch
    import torch.nn.functional as F

    def set_mode(mode, models):
        for m in models:
            if mode == "train":
                m.train()
            else:
                m.eval()

    def evaluate(model, loader):
        with torch.no_grad():
            return sum(F.cross_entropy(model(x), y).item() for x, y in loader)

    def main(model, optimizer, train_loader, val_loader, epochs):
        for epoch in range(epochs):
            set_mode("train", [model])
            for x, y in train_loader:
                optimizer.zero_grad()
                F.cross_entropy(model(x), y).backward()
                optimizer.step()
            set_mode("eval", [model])
            print(evaluate(model, val_loader))
    """,
    # teacher = teacher.half() keeps the module made in eval mode (Net().eval())
    """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.2))

    def forward(self, x):
        return self.body(x)


teacher = Net().eval()
teacher = teacher.half()


def predict(x):
    with torch.no_grad():
        return teacher(x.half())
""",
    # the factory switches the model it returns to eval mode
    """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.3), nn.Linear(8, 2))

    def forward(self, x):
        return self.body(x)


def load_model(path):
    m = Net()
    m.load_state_dict(torch.load(path))
    m.eval()
    return m


model = load_model("weights.pt")


def predict(x):
    with torch.no_grad():
        return model(x).argmax(1)
""",
    # the factory's returns disagree (a scripted model, of unknown mode, on one path)
    """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.3), nn.Linear(8, 2))

    def forward(self, x):
        return self.body(x)


def load_model(path, scripted):
    if scripted:
        return torch.jit.load(path)
    m = Net()
    m.load_state_dict(torch.load(path))
    return m


model = load_model("weights.pt", scripted=True)


def predict(x):
    with torch.no_grad():
        return model(x).argmax(1)
""",
    # tuple assignment of plain functions (``net, loss = linreg, squared_loss``): no model, no mode
    """
import torch


def linreg(X, w, b):
    return torch.mm(X, w) + b


def squared_loss(y_hat, y):
    return (y_hat - y) ** 2 / 2


def fit(features, labels, test_x, test_y, w, b, lr):
    net, loss = linreg, squared_loss
    for X, y in zip(features, labels):
        loss(net(X, w, b), y).sum().backward()
        with torch.no_grad():
            w -= lr * w.grad
            b -= lr * b.grad
            w.grad.zero_()
            b.grad.zero_()
    return loss(net(test_x, w, b), test_y).mean().item()
    """,
    # the negative branch of ``isinstance(net, nn.Module)``: the mode is the ``is_training=False`` argument
    """
import torch


def evaluate_accuracy(data_iter, net):
    acc_sum, n = 0.0, 0
    for X, y in data_iter:
        if isinstance(net, torch.nn.Module):
            net.eval()
            with torch.no_grad():
                acc_sum += (net(X).argmax(dim=1) == y).float().sum().item()
            net.train()
        else:
            acc_sum += (net(X, is_training=False).argmax(dim=1) == y).float().sum().item()
        n += y.shape[0]
    return acc_sum / n
    """,
    # under ``if not isinstance(net, nn.Module)``: no module, no mode
    """
import torch


def evaluate_accuracy(data_iter, net):
    acc_sum = 0.0
    for X, y in data_iter:
        if not isinstance(net, torch.nn.Module):
            acc_sum += (net(X).argmax(dim=1) == y).float().sum().item()
    return acc_sum
    """,
    # a helper shared by training and validation: the validation function switches the model to
    # eval mode itself, and the training step switches it back
    """
import torch
import torch.nn.functional as F


class Trainer:
    def __init__(self, model, optimizer, loaders):
        self.model = model
        self.optimizer = optimizer
        self.loaders = loaders

    def _forward_pass(self, x, y):
        output = self.model(x)
        return output, F.cross_entropy(output, y)

    def train_epoch(self):
        for i, (x, y) in enumerate(self.loaders["train"]):
            self.model.train()
            _, loss = self._forward_pass(x, y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            if i % 100 == 0:
                print(self.validate(self.loaders["val"]))

    def validate(self, val_loader):
        self.model.eval()
        total = 0.0
        with torch.no_grad():
            for x, y in val_loader:
                _, loss = self._forward_pass(x, y)
                total += loss.item()
        return total
""",
    # a parameter rebound to a model that its factory hands over in eval mode; a parameter moved
    # in place (``model = model.to(dev)``) holds what the caller handed in (in eval mode here)
    """
import torch
from torch import nn


class SegNet(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.body = nn.Sequential(nn.Conv1d(4, 32, 1), nn.BatchNorm1d(32), nn.ReLU(), nn.Conv1d(32, classes, 1))

    def forward(self, x):
        return self.body(x)


def build(name, pretrained=True):
    net = SegNet(19)
    if pretrained:
        net.load_state_dict(torch.load(f"{name}.pt"))
    return net.eval()


def get_inference(model, points):
    model = build(model, pretrained=True)
    model = model.to("cpu")
    with torch.no_grad():
        return model(points).argmax(1)


def evaluate(model, points):
    model = model.to("cpu")
    with torch.no_grad():
        return model(points).argmax(1)


if __name__ == "__main__":
    print(get_inference("segnet", torch.randn(1, 4, 1000)))
    net = build("segnet")
    print(evaluate(net, torch.randn(1, 4, 1000)))
""",
    # a class with a forward of its own (an ensemble wrapper): its parts' modes are its business
    # (its to_eval() switches the members; the embedding it also runs has no mode to speak of)
    """
import torch
from torch import nn


class Ensemble:
    def __init__(self, dim):
        self.models = []
        self.embed = nn.Embedding(10, dim)

    def forward(self, x):
        out = 0
        for m in self.models:
            out = out + m(self.embed(x))
        return out

    def to_eval(self):
        for m in self.models:
            m.eval()


ens = Ensemble(8)
ens.models.append(nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.1)))
opt = torch.optim.SGD(ens.models[0].parameters(), lr=0.1)
for x, y in train_loader:
    opt.zero_grad()
    ((ens.forward(x) - y) ** 2).mean().backward()
    opt.step()


@torch.no_grad()
def predict(loader):
    return [ens.forward(x) for x, _ in loader]


ens.to_eval()
print(predict(val_loader))
""",
]

INVALID = [
    # an inference wrapper (a plain class) that loads trained weights into its model and runs
    # it under no_grad, never in eval mode
    Example(
        """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.Dropout(0.1))

    def forward(self, x):
        return self.body(x)


class Adapter:
    def __init__(self, weights):
        self._model = Net()
        self._model.load_state_dict(torch.load(weights))

    def forward(self, x):
        with torch.no_grad():
            return self._model(x)

""",
        fixed="""
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.Dropout(0.1))

    def forward(self, x):
        return self.body(x)


class Adapter:
    def __init__(self, weights):
        self._model = Net()
        self._model.load_state_dict(torch.load(weights))

    def forward(self, x):
        self._model.eval()
        with torch.no_grad():
            return self._model(x)

""",
    ),
    # a script's trained model looked at under inference_mode after its training loop, on a
    # batch whose name says nothing: evaluated under no_grad (RULES), in training mode
    Example(
        """
import torch
from torch import nn

model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 1))
opt = torch.optim.Adam(model.parameters())
for step in range(100):
    x, y = loader.get_batch(32)
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()

x, y = loader.get_batch(5000)
with torch.inference_mode():
    pred = model(x)
print(((pred - y) ** 2).mean())
""",
        fixed="""
import torch
from torch import nn

model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 1))
opt = torch.optim.Adam(model.parameters())
for step in range(100):
    x, y = loader.get_batch(32)
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()

x, y = loader.get_batch(5000)
model.eval()
with torch.inference_mode():
    pred = model(x)
print(((pred - y) ** 2).mean())
""",
    ),
    # a frozen encoder's features, computed under no_grad, train a classifier head: no
    # gradient flows back into the encoder, which runs in training mode (its batch norm)
    Example(
        """
import numpy as np
import torch
from torch import nn


def inference(loader, encoder):
    feats, labels = [], []
    for x, y in loader:
        with torch.no_grad():
            h = encoder(x)
        feats.extend(h.numpy())
        labels.extend(y.numpy())
    return np.array(feats), np.array(labels)


def fit_head(head, X, y, optimizer):
    for xb, yb in zip(torch.from_numpy(X).split(64), torch.from_numpy(y).split(64)):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(head(xb), yb)
        loss.backward()
        optimizer.step()


encoder = nn.Sequential(nn.Linear(32, 16), nn.BatchNorm1d(16), nn.ReLU())
encoder.load_state_dict(torch.load("encoder.pt"))
head = nn.Linear(16, 10)
X, y = inference(train_loader, encoder)
fit_head(head, X, y, torch.optim.Adam(head.parameters()))
""",
        fixed="""
import numpy as np
import torch
from torch import nn


def inference(loader, encoder):
    encoder.eval()
    feats, labels = [], []
    for x, y in loader:
        with torch.no_grad():
            h = encoder(x)
        feats.extend(h.numpy())
        labels.extend(y.numpy())
    return np.array(feats), np.array(labels)


def fit_head(head, X, y, optimizer):
    for xb, yb in zip(torch.from_numpy(X).split(64), torch.from_numpy(y).split(64)):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(head(xb), yb)
        loss.backward()
        optimizer.step()


encoder = nn.Sequential(nn.Linear(32, 16), nn.BatchNorm1d(16), nn.ReLU())
encoder.load_state_dict(torch.load("encoder.pt"))
head = nn.Linear(16, 10)
X, y = inference(train_loader, encoder)
fit_head(head, X, y, torch.optim.Adam(head.parameters()))
""",
    ),
    # the same evaluator engine: the model (with dropout) is never switched to eval mode; the fix is
    # unsafe (when the engines run is decided by event handlers the code does not show)
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


@torch.no_grad()
def eval_step(engine, batch):
    x, y = batch
    return model(x).argmax(1).eq(y).float().mean().item()


trainer = Engine(train_step)
evaluator = Engine(eval_step)
trainer.run(train_loader, max_epochs=2)
evaluator.run(val_loader)
""",
    # a test block inside the training loop rebinds the loop's batch name to test data: what
    # reaches the forward there is the test batch (the assignment that reaches it, not the name)
    Example(
        """
import torch
from torch import nn
from data import random_batch

net = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.3), nn.Linear(16, 8))
opt = torch.optim.Adam(net.parameters())
train_set = torch.randn(256, 8)
test_set = torch.randn(64, 8)
loader = torch.utils.data.DataLoader(train_set, batch_size=16)

for step, x in enumerate(loader):
    opt.zero_grad()
    loss = (net(x) - x).pow(2).mean()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        with torch.no_grad():
            x = random_batch(test_set, 16)
            error = (net(x) - x).pow(2).mean()
        print(step, error.item())
""",
        fixed="""
import torch
from torch import nn
from data import random_batch

net = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.3), nn.Linear(16, 8))
opt = torch.optim.Adam(net.parameters())
train_set = torch.randn(256, 8)
test_set = torch.randn(64, 8)
loader = torch.utils.data.DataLoader(train_set, batch_size=16)

for step, x in enumerate(loader):
    net.train()
    opt.zero_grad()
    loss = (net(x) - x).pow(2).mean()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        net.eval()
        with torch.no_grad():
            x = random_batch(test_set, 16)
            error = (net(x) - x).pow(2).mean()
        print(step, error.item())
""",
    ),
    # a `translate()` helper the script calls once the model is trained: the trained model's
    # evaluation, whatever the name (a name like it alone, `sample()`, is left alone)
    Example(
        """
import torch
from torch import nn


class Seq2Seq(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.rnn = nn.GRU(hidden, hidden, num_layers=2, dropout=0.3)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        states, _ = self.rnn(self.embed(tokens))
        return self.out(states)


def fit(net, batches):
    opt = torch.optim.Adam(net.parameters())
    for src, tgt in batches:
        opt.zero_grad()
        logits = net(src)
        nn.functional.cross_entropy(logits.flatten(0, 1), tgt.flatten()).backward()
        opt.step()


def translate(net, src):
    with torch.no_grad():
        return net(src).argmax(-1)


net = Seq2Seq(100, 32)
fit(net, [(torch.randint(0, 100, (5, 4)), torch.randint(0, 100, (5, 4)))])
print(translate(net, torch.randint(0, 100, (5, 1))))
""",
        fixed="""
import torch
from torch import nn


class Seq2Seq(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.rnn = nn.GRU(hidden, hidden, num_layers=2, dropout=0.3)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        states, _ = self.rnn(self.embed(tokens))
        return self.out(states)


def fit(net, batches):
    opt = torch.optim.Adam(net.parameters())
    for src, tgt in batches:
        opt.zero_grad()
        logits = net(src)
        nn.functional.cross_entropy(logits.flatten(0, 1), tgt.flatten()).backward()
        opt.step()


def translate(net, src):
    net.eval()
    with torch.no_grad():
        return net(src).argmax(-1)


net = Seq2Seq(100, 32)
fit(net, [(torch.randint(0, 100, (5, 4)), torch.randint(0, 100, (5, 4)))])
print(translate(net, torch.randint(0, 100, (5, 1))))
""",
    ),
    # the optimizer comes from a method of the class (built there on some paths, handed in on
    # others); evaluation switches the model to eval mode through two helpers and nothing
    # switches it back for the next epoch
    Example(
        """
import torch
import torch.nn as nn


class BaseModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 1))

    def forward(self, x):
        return self.fc(x)

    def compile(self, optimizer):
        self.optim = self._get_optim(optimizer)

    def _get_optim(self, optimizer):
        if isinstance(optimizer, str):
            if optimizer == "sgd":
                optim = torch.optim.SGD(self.parameters(), lr=0.01)
            else:
                optim = torch.optim.Adam(self.parameters())
        else:
            optim = optimizer
        return optim

    def fit(self, loader, val_loader, epochs):
        model = self.train()
        for epoch in range(epochs):
            for x, y in loader:
                self.optim.zero_grad()
                loss = ((model(x) - y) ** 2).mean()
                loss.backward()
                self.optim.step()
            print(self.evaluate(val_loader))

    def evaluate(self, loader):
        return self.predict(loader)

    def predict(self, loader):
        model = self.eval()
        out = []
        with torch.no_grad():
            for x, _ in loader:
                out.append(model(x))
        return out
""",
        fixed="""
import torch
import torch.nn as nn


class BaseModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 1))

    def forward(self, x):
        return self.fc(x)

    def compile(self, optimizer):
        self.optim = self._get_optim(optimizer)

    def _get_optim(self, optimizer):
        if isinstance(optimizer, str):
            if optimizer == "sgd":
                optim = torch.optim.SGD(self.parameters(), lr=0.01)
            else:
                optim = torch.optim.Adam(self.parameters())
        else:
            optim = optimizer
        return optim

    def fit(self, loader, val_loader, epochs):
        model = self.train()
        for epoch in range(epochs):
            self.train()
            for x, y in loader:
                self.optim.zero_grad()
                loss = ((model(x) - y) ** 2).mean()
                loss.backward()
                self.optim.step()
            print(self.evaluate(val_loader))

    def evaluate(self, loader):
        return self.predict(loader)

    def predict(self, loader):
        model = self.eval()
        out = []
        with torch.no_grad():
            for x, _ in loader:
                out.append(model(x))
        return out
""",
    ),
    # the evaluation function never calls eval(): dropout stays on
    Example(
        """
import torch

@torch.no_grad()
def evaluate(model, loader):
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
    # eval() inside the training loop, never undone: epochs after the first train in eval mode
    Example(
        """
import torch

model = Net()
optimizer = torch.optim.Adam(model.parameters())
for epoch in range(10):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        for x, y in val_loader:
            val_loss = criterion(model(x), y)
""",
        fixed="""
import torch

model = Net()
optimizer = torch.optim.Adam(model.parameters())
for epoch in range(10):
    model.train()
    for x, y in train_loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        for x, y in val_loader:
            val_loss = criterion(model(x), y)
""",
    ),
    # the evaluation helper switches to eval mode and the training loop never switches back
    Example(
        """
import torch

def validate(model, loader):
    model.eval()
    with torch.no_grad():
        return sum(criterion(model(x), y).item() for x, y in loader)

def fit(model, optimizer, train_loader, val_loader, epochs):
    for epoch in range(epochs):
        for x, y in train_loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        print(validate(model, val_loader))
""",
        fixed="""
import torch

def validate(model, loader):
    model.eval()
    with torch.no_grad():
        return sum(criterion(model(x), y).item() for x, y in loader)

def fit(model, optimizer, train_loader, val_loader, epochs):
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        print(validate(model, val_loader))
""",
    ),
    # a validation loop inside the training function, under no_grad but in training mode
    Example(
        """
import torch

def train(model, train_loader, val_loader, optimizer, epochs):
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            optimizer.step()
        with torch.no_grad():
            for x, y in val_loader:
                acc = (model(x).argmax(1) == y).float().mean()
""",
        fixed="""
import torch

def train(model, train_loader, val_loader, optimizer, epochs):
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            for x, y in val_loader:
                acc = (model(x).argmax(1) == y).float().mean()
""",
    ),
    # another model's eval() does not count
    Example(
        """
import torch

@torch.no_grad()
def evaluate(encoder, decoder, loader):
    encoder.eval()
    for src, tgt in loader:
        out = decoder(encoder(src))
""",
        fixed="""
import torch

@torch.no_grad()
def evaluate(encoder, decoder, loader):
    decoder.eval()
    encoder.eval()
    for src, tgt in loader:
        out = decoder(encoder(src))
""",
    ),
    # eval in a training loop on a step interval, never undone
    Example(
        """
import torch

for step, (x, y) in enumerate(train_loader):
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    if step % 500 == 0:
        model.eval()
        with torch.no_grad():
            print(step, criterion(model(x_val), y_val).item())
""",
        fixed="""
import torch

for step, (x, y) in enumerate(train_loader):
    model.train()
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    if step % 500 == 0:
        model.eval()
        with torch.no_grad():
            print(step, criterion(model(x_val), y_val).item())
""",
    ),
    # a model built with trained weights by its constructor (torchvision's ``pretrained=True``,
    # ``weights=...``) comes in training mode: single-image inference in main() uses batch statistics
    Example(
        """
import torch
from torchvision import models
from PIL import Image
from torchvision.transforms.functional import to_tensor


def main(path):
    model = models.resnet18(pretrained=True)
    image = to_tensor(Image.open(path)).unsqueeze(0)
    with torch.no_grad():
        out = model(image)
    print(out.argmax(1).item())
""",
        fixed="""
import torch
from torchvision import models
from PIL import Image
from torchvision.transforms.functional import to_tensor


def main(path):
    model = models.resnet18(pretrained=True)
    image = to_tensor(Image.open(path)).unsqueeze(0)
    model.eval()
    with torch.no_grad():
        out = model(image)
    print(out.argmax(1).item())
""",
    ),
    # the imported class called once to build the network, rebinding its own name: the constructor
    # is no evaluation; the forward under no_grad is
    Example(
        """
import torch
from models import net

if __name__ == "__main__":
    net = net(6)
    net.load_state_dict(torch.load("model.pt"))
    obs = torch.rand(1, 4)
    with torch.no_grad():
        q = net(obs)
    print(q.argmax().item())
""",
        fixed="""
import torch
from models import net

if __name__ == "__main__":
    net = net(6)
    net.load_state_dict(torch.load("model.pt"))
    obs = torch.rand(1, 4)
    net.eval()
    with torch.no_grad():
        q = net(obs)
    print(q.argmax().item())
""",
    ),
    # a predict helper whose only caller is an evaluation wrapper that takes the model as well:
    # nobody on the way puts it in eval mode
    Example(
        """
import torch


@torch.no_grad()
def predict(model, sentence):
    tokens = torch.tensor([encode(sentence)])
    return model(tokens).argmax(-1)


def translate(model, sentences):
    for sentence in sentences:
        print(sentence, predict(model, sentence))
""",
        fixed="""
import torch


@torch.no_grad()
def predict(model, sentence):
    model.eval()
    tokens = torch.tensor([encode(sentence)])
    return model(tokens).argmax(-1)


def translate(model, sentences):
    for sentence in sentences:
        print(sentence, predict(model, sentence))
""",
    ),
    # an inference script that loads weights and never switches to eval mode
    Example(
        """
import torch

model = Net()
model.load_state_dict(torch.load("model.pt"))
with torch.no_grad():
    predictions = model(images).argmax(1)
""",
        fixed="""
import torch

model = Net()
model.load_state_dict(torch.load("model.pt"))
model.eval()
with torch.no_grad():
    predictions = model(images).argmax(1)
""",
    ),
    # a trainer method; the fix also switches back to training mode in the epoch loop
    Example(
        """
import torch

class Trainer:
    def __init__(self, model, optimizer, criterion, train_loader, val_loader):
        self.model, self.optimizer, self.criterion = model, optimizer, criterion
        self.train_loader, self.val_loader = train_loader, val_loader

    @torch.no_grad()
    def validate(self):
        return [self.model(x) for x, _ in self.val_loader]

    def fit(self, epochs):
        for epoch in range(epochs):
            for x, y in self.train_loader:
                self.optimizer.zero_grad()
                self.criterion(self.model(x), y).backward()
                self.optimizer.step()
            self.validate()
""",
        fixed="""
import torch

class Trainer:
    def __init__(self, model, optimizer, criterion, train_loader, val_loader):
        self.model, self.optimizer, self.criterion = model, optimizer, criterion
        self.train_loader, self.val_loader = train_loader, val_loader

    @torch.no_grad()
    def validate(self):
        self.model.eval()
        return [self.model(x) for x, _ in self.val_loader]

    def fit(self, epochs):
        for epoch in range(epochs):
            self.model.train()
            for x, y in self.train_loader:
                self.optimizer.zero_grad()
                self.criterion(self.model(x), y).backward()
                self.optimizer.step()
            self.validate()
""",
    ),
    # a Trainer holding the student: the caller switches a different model (the teacher) to eval mode
    Example(
        """
import torch

class Trainer:
    def __init__(self, model, optimizer, loss_fn):
        self.model = model
        self.optimizer = optimizer
        self.loss_fn = loss_fn

    def train_epoch(self, loader):
        self.model.train()
        for x, y in loader:
            self.optimizer.zero_grad()
            self.loss_fn(self.model(x), y).backward()
            self.optimizer.step()

    @torch.no_grad()
    def evaluate(self, loader):
        return sum(self.loss_fn(self.model(x), y).item() for x, y in loader)

def main():
    teacher, student = Net(), Net()
    trainer = Trainer(student, torch.optim.Adam(student.parameters()), torch.nn.MSELoss())
    for epoch in range(10):
        trainer.train_epoch(train_loader)
        teacher.eval()
        print(trainer.evaluate(val_loader))
""",
        fixed="""
import torch

class Trainer:
    def __init__(self, model, optimizer, loss_fn):
        self.model = model
        self.optimizer = optimizer
        self.loss_fn = loss_fn

    def train_epoch(self, loader):
        self.model.train()
        for x, y in loader:
            self.optimizer.zero_grad()
            self.loss_fn(self.model(x), y).backward()
            self.optimizer.step()

    @torch.no_grad()
    def evaluate(self, loader):
        self.model.eval()
        return sum(self.loss_fn(self.model(x), y).item() for x, y in loader)

def main():
    teacher, student = Net(), Net()
    trainer = Trainer(student, torch.optim.Adam(student.parameters()), torch.nn.MSELoss())
    for epoch in range(10):
        trainer.train_epoch(train_loader)
        teacher.eval()
        print(trainer.evaluate(val_loader))
""",
    ),
    # the model was switched to training mode after loading it with from_pretrained
    Example(
        """
import torch
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("gpt2")
model.train()
finetune(model)

@torch.no_grad()
def predict_next_tokens(prompt_ids):
    for _ in range(20):
        logits = model(prompt_ids).logits
        prompt_ids = torch.cat([prompt_ids, logits[:, -1:].argmax(-1)], dim=1)
    return prompt_ids

print(predict_next_tokens(ids))
""",
        fixed="""
import torch
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("gpt2")
model.train()
finetune(model)

@torch.no_grad()
def predict_next_tokens(prompt_ids):
    model.eval()
    for _ in range(20):
        logits = model(prompt_ids).logits
        prompt_ids = torch.cat([prompt_ids, logits[:, -1:].argmax(-1)], dim=1)
    return prompt_ids

print(predict_next_tokens(ids))
""",
    ),
    # a test loop at module level after training, under no_grad but never switched to eval
    Example(
        """
import torch

net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.01)
for epoch in range(5):
    for x, y in train_loader:
        opt.zero_grad()
        criterion(net(x), y).backward()
        opt.step()

correct = 0
with torch.no_grad():
    for x, y in test_loader:
        correct += (net(x).argmax(1) == y).sum().item()
""",
        fixed="""
import torch

net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.01)
for epoch in range(5):
    for x, y in train_loader:
        opt.zero_grad()
        criterion(net(x), y).backward()
        opt.step()

correct = 0
net.eval()
with torch.no_grad():
    for x, y in test_loader:
        correct += (net(x).argmax(1) == y).sum().item()
""",
    ),
    # the only caller loads a fresh model and never switches it to eval mode
    Example(
        """
import torch

def predict_batches(model, batches):
    with torch.no_grad():
        return [model(b) for b in batches]

def main():
    model = build_model()
    model.load_state_dict(torch.load("ckpt.pt"))
    print(predict_batches(model, test_batches))
""",
        fixed="""
import torch

def predict_batches(model, batches):
    model.eval()
    with torch.no_grad():
        return [model(b) for b in batches]

def main():
    model = build_model()
    model.load_state_dict(torch.load("ckpt.pt"))
    print(predict_batches(model, test_batches))
""",
    ),
    # an explicit `model.train()` before the evaluation loop (no repeated sampling, no targets: not deliberate)
    Example(
        """
import torch

def evaluate(model, loader):
    model.train()
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(1) == y).sum().item()
    return correct
""",
        fixed="""
import torch

def evaluate(model, loader):
    model.train()
    correct = 0
    model.eval()
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(1) == y).sum().item()
    return correct
""",
    ),
    # `model.forward(x)` evaluates too
    Example(
        """
import torch

@torch.no_grad()
def validate(model, val_loader):
    total = 0.0
    for x, y in val_loader:
        total += torch.nn.functional.cross_entropy(model.forward(x), y).item()
    return total
""",
        fixed="""
import torch

@torch.no_grad()
def validate(model, val_loader):
    total = 0.0
    model.eval()
    for x, y in val_loader:
        total += torch.nn.functional.cross_entropy(model.forward(x), y).item()
    return total
""",
    ),
    # a base class's fit() calls the evaluate() a subclass defines, after the training epoch switched to train mode
    Example(
        """
import torch

class BaseTrainer:
    def __init__(self, model, opt, train_loader, val_loader):
        self.model = model
        self.opt = opt
        self.train_loader = train_loader
        self.val_loader = val_loader

    def fit(self, epochs):
        for _ in range(epochs):
            self.train_epoch()
            self.evaluate()

class Trainer(BaseTrainer):
    def train_epoch(self):
        self.model.train()
        for x, y in self.train_loader:
            self.opt.zero_grad()
            torch.nn.functional.mse_loss(self.model(x), y).backward()
            self.opt.step()

    @torch.no_grad()
    def evaluate(self):
        return sum(torch.nn.functional.mse_loss(self.model(x), y).item() for x, y in self.val_loader)
""",
        fixed="""
import torch

class BaseTrainer:
    def __init__(self, model, opt, train_loader, val_loader):
        self.model = model
        self.opt = opt
        self.train_loader = train_loader
        self.val_loader = val_loader

    def fit(self, epochs):
        for _ in range(epochs):
            self.train_epoch()
            self.evaluate()

class Trainer(BaseTrainer):
    def train_epoch(self):
        self.model.train()
        for x, y in self.train_loader:
            self.opt.zero_grad()
            torch.nn.functional.mse_loss(self.model(x), y).backward()
            self.opt.step()

    @torch.no_grad()
    def evaluate(self):
        self.model.eval()
        return sum(torch.nn.functional.mse_loss(self.model(x), y).item() for x, y in self.val_loader)
""",
    ),
    # the tutorial shape: train at module level, then test under no_grad with no eval() anywhere
    Example(
        """
import torch
import torch.nn as nn

net = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Dropout(0.5), nn.Linear(64, 2))
optimizer = torch.optim.Adam(net.parameters())
for epoch in range(3):
    for x, y in trainloader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(net(x), y).backward()
        optimizer.step()
correct = 0
with torch.no_grad():
    for x, y in testloader:
        correct += (net(x).argmax(1) == y).sum().item()
print(correct)
""",
        fixed="""
import torch
import torch.nn as nn

net = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Dropout(0.5), nn.Linear(64, 2))
optimizer = torch.optim.Adam(net.parameters())
for epoch in range(3):
    for x, y in trainloader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(net(x), y).backward()
        optimizer.step()
correct = 0
net.eval()
with torch.no_grad():
    for x, y in testloader:
        correct += (net(x).argmax(1) == y).sum().item()
print(correct)
""",
    ),
    # a model kept in a private attribute (`self._net`), known as a model by its name
    Example(
        """
import torch

class Predictor:
    def __init__(self, net):
        self._net = net

    @torch.no_grad()
    def predict(self, X):
        return torch.cat([self._net(xb).argmax(1) for xb in torch.split(X, 256)])
""",
        fixed="""
import torch

class Predictor:
    def __init__(self, net):
        self._net = net

    @torch.no_grad()
    def predict(self, X):
        self._net.eval()
        return torch.cat([self._net(xb).argmax(1) for xb in torch.split(X, 256)])
""",
    ),
    # a model's own predict() runs in whatever mode the model was left in: reported, with self.eval() offered as an unsafe fix (it sticks after predict returns)
    Example(
        """
import torch
import torch.nn as nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.1), nn.Linear(8, 2))

    def forward(self, x):
        return self.fc(x)

    @torch.no_grad()
    def predict(self, x):
        return self(x).argmax(-1)
""",
    ),

    # a model defined here with neither dropout nor batch norm: still reported (RULES.md: layers get added
    # later), and the message says that it is harmless today instead of claiming dropout misbehaves
    Example(
        """
import torch
import torch.nn as nn

class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, x):
        return self.body(x)

@torch.no_grad()
def evaluate(model, loader):
    total = 0.0
    for x, y in loader:
        total += (model(x) - y).abs().sum().item()
    return total

model = Regressor()
print(evaluate(model, val_loader))
""",
        fixed="""
import torch
import torch.nn as nn

class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, x):
        return self.body(x)

@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    total = 0.0
    for x, y in loader:
        total += (model(x) - y).abs().sum().item()
    return total

model = Regressor()
print(evaluate(model, val_loader))
""",
    ),
    # nn.Sequential with a Dropout layer: the message names the dropout
    Example(
        """
import torch
from torch import nn

net = nn.Sequential(nn.Linear(8, 32), nn.Dropout(0.2), nn.Linear(32, 2))

def test(loader):
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (net(x).argmax(1) == y).sum().item()
    return correct
""",
        fixed="""
import torch
from torch import nn

net = nn.Sequential(nn.Linear(8, 32), nn.Dropout(0.2), nn.Linear(32, 2))

def test(loader):
    net.eval()
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (net(x).argmax(1) == y).sum().item()
    return correct
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
with torch.no_grad():
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
with torch.no_grad():
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
with torch.no_grad():
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
    # a periodic evaluation inside the training loop on a batch fetched by split name, in
    # training mode: eval() before it, and train() back at the start of the training step
    Example(
        """
import torch

def get_batch(split):
    if split == "train":
        data = np.memmap("train.bin", dtype=np.uint16, mode="r")
    else:
        data = np.memmap("val.bin", dtype=np.uint16, mode="r")
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([torch.from_numpy(data[i:i + block_size]) for i in ix])
    y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + block_size]) for i in ix])
    return x, y

def train(model, optimizer, max_iters, eval_interval):
    model.train()
    for it in range(max_iters):
        xb, yb = get_batch("train")
        logits, loss = model(xb, yb)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if it % eval_interval == 0:
            with torch.no_grad():
                xv, yv = get_batch("val")
                logits, val_loss = model(xv, yv)
            print(it, val_loss.item())
""",
        fixed="""
import torch

def get_batch(split):
    if split == "train":
        data = np.memmap("train.bin", dtype=np.uint16, mode="r")
    else:
        data = np.memmap("val.bin", dtype=np.uint16, mode="r")
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([torch.from_numpy(data[i:i + block_size]) for i in ix])
    y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + block_size]) for i in ix])
    return x, y

def train(model, optimizer, max_iters, eval_interval):
    model.train()
    for it in range(max_iters):
        model.train()
        xb, yb = get_batch("train")
        logits, loss = model(xb, yb)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if it % eval_interval == 0:
            model.eval()
            with torch.no_grad():
                xv, yv = get_batch("val")
                logits, val_loss = model(xv, yv)
            print(it, val_loss.item())
""",
    ),
    # HF generate() runs the model in the mode it is in: after training, over the validation
    # loader, dropout is still on
    Example(
        """
import torch
from transformers import AutoModelForSeq2SeqLM

model = AutoModelForSeq2SeqLM.from_pretrained("t5-small")
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

for epoch in range(3):
    model.train()
    for batch in train_loader:
        model(**batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    for batch in val_loader:
        print(model.generate(batch["input_ids"], max_new_tokens=32))
""",
        fixed="""
import torch
from transformers import AutoModelForSeq2SeqLM

model = AutoModelForSeq2SeqLM.from_pretrained("t5-small")
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

for epoch in range(3):
    model.train()
    for batch in train_loader:
        model(**batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.eval()
    for batch in val_loader:
        print(model.generate(batch["input_ids"], max_new_tokens=32))
""",
    ),
    # one epoch function for training and validation, called with its flag off: the model
    # is still in training mode from the training call; eval() before the validation call
    Example(
        """
import torch
import torch.nn.functional as F

def run_epoch(model, loader, optimizer, is_train):
    total = 0.0
    with torch.set_grad_enabled(is_train):
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            if is_train:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            total += loss.item()
    return total

def main(model, optimizer, train_loader, val_loader, epochs):
    for epoch in range(epochs):
        model.train()
        run_epoch(model, train_loader, optimizer, True)
        val_loss = run_epoch(model, val_loader, optimizer, False)
        print(epoch, val_loss)
""",
        fixed="""
import torch
import torch.nn.functional as F

def run_epoch(model, loader, optimizer, is_train):
    total = 0.0
    with torch.set_grad_enabled(is_train):
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            if is_train:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            total += loss.item()
    return total

def main(model, optimizer, train_loader, val_loader, epochs):
    for epoch in range(epochs):
        model.train()
        run_epoch(model, train_loader, optimizer, True)
        model.eval()
        val_loss = run_epoch(model, val_loader, optimizer, False)
        model.train()
        print(epoch, val_loss)
""",
    ),
    # the shared epoch function switches the model to training mode whatever its flag says:
    # the validation call evaluates in training mode (no fix: the function must change)
    Example(
        """
import torch
import torch.nn.functional as F

def run_epoch(model, loader, optimizer, is_train=True):
    model.train()
    total = 0.0
    with torch.set_grad_enabled(is_train):
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            if is_train:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            total += loss.item()
    return total

def main(model, optimizer, train_loader, val_loader, epochs):
    for epoch in range(epochs):
        run_epoch(model, train_loader, optimizer)
        model.eval()
        print(epoch, run_epoch(model, val_loader, optimizer, is_train=False))
""",
    ),
    # a helper whose effect depends on a constant argument: set_mode("train", ...) before the
    # evaluation leaves the model in training mode
    Example(
        """
import torch
import torch.nn.functional as F

def set_mode(mode, models):
    for m in models:
        if mode == "train":
            m.train()
        else:
            m.eval()

def evaluate(model, loader):
    with torch.no_grad():
        return sum(F.cross_entropy(model(x), y).item() for x, y in loader)

def main(model, optimizer, train_loader, val_loader, epochs):
    for epoch in range(epochs):
        set_mode("train", [model])
        for x, y in train_loader:
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
        print(evaluate(model, val_loader))
""",
        fixed="""
import torch
import torch.nn.functional as F

def set_mode(mode, models):
    for m in models:
        if mode == "train":
            m.train()
        else:
            m.eval()

def evaluate(model, loader):
    model.eval()
    with torch.no_grad():
        return sum(F.cross_entropy(model(x), y).item() for x, y in loader)

def main(model, optimizer, train_loader, val_loader, epochs):
    for epoch in range(epochs):
        set_mode("train", [model])
        for x, y in train_loader:
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
        print(evaluate(model, val_loader))
""",
    ),
    # validation every few steps inside the training loop, over batches a local generator
    # makes of the validation data (char-rnn): the LSTM's dropout is still on
    Example(
        """
import numpy as np
import torch

def get_batches(arr, batch_size, seq_length):
    arr = arr[:len(arr) // (batch_size * seq_length) * batch_size * seq_length].reshape((batch_size, -1))
    for i in range(0, arr.shape[1], seq_length):
        x = arr[:, i:i + seq_length]
        yield x, np.roll(x, -1)

def train(net, data, val_data, criterion, opt, epochs, print_every=10):
    net.train()
    counter = 0
    for e in range(epochs):
        for x, y in get_batches(data, 10, 50):
            counter += 1
            net.zero_grad()
            loss = criterion(net(torch.from_numpy(x)), torch.from_numpy(y).view(-1))
            loss.backward()
            opt.step()
            if counter % print_every == 0:
                val_losses = []
                with torch.no_grad():
                    for vx, vy in get_batches(val_data, 10, 50):
                        val_loss = criterion(net(torch.from_numpy(vx)), torch.from_numpy(vy).view(-1))
                        val_losses.append(val_loss.item())
                print(counter, loss.item(), np.mean(val_losses))
""",
        fixed="""
import numpy as np
import torch

def get_batches(arr, batch_size, seq_length):
    arr = arr[:len(arr) // (batch_size * seq_length) * batch_size * seq_length].reshape((batch_size, -1))
    for i in range(0, arr.shape[1], seq_length):
        x = arr[:, i:i + seq_length]
        yield x, np.roll(x, -1)

def train(net, data, val_data, criterion, opt, epochs, print_every=10):
    net.train()
    counter = 0
    for e in range(epochs):
        for x, y in get_batches(data, 10, 50):
            net.train()
            counter += 1
            net.zero_grad()
            loss = criterion(net(torch.from_numpy(x)), torch.from_numpy(y).view(-1))
            loss.backward()
            opt.step()
            if counter % print_every == 0:
                val_losses = []
                net.eval()
                with torch.no_grad():
                    for vx, vy in get_batches(val_data, 10, 50):
                        val_loss = criterion(net(torch.from_numpy(vx)), torch.from_numpy(vy).view(-1))
                        val_losses.append(val_loss.item())
                print(counter, loss.item(), np.mean(val_losses))
""",
    ),
    # the same with nothing named for evaluation: the flag alone says this call evaluates
    Example(
        """
import torch
import torch.nn.functional as F

def run_epoch(model, batches, optimizer, is_train):
    total = 0.0
    with torch.set_grad_enabled(is_train):
        for x, y in batches:
            loss = F.cross_entropy(model(x), y)
            if is_train:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            total += loss.item()
    return total

def main(model, optimizer, batches_a, batches_b, epochs):
    for epoch in range(epochs):
        model.train()
        run_epoch(model, batches_a, optimizer, True)
        print(epoch, run_epoch(model, batches_b, optimizer, False))
""",
        fixed="""
import torch
import torch.nn.functional as F

def run_epoch(model, batches, optimizer, is_train):
    total = 0.0
    with torch.set_grad_enabled(is_train):
        for x, y in batches:
            loss = F.cross_entropy(model(x), y)
            if is_train:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            total += loss.item()
    return total

def main(model, optimizer, batches_a, batches_b, epochs):
    for epoch in range(epochs):
        model.train()
        run_epoch(model, batches_a, optimizer, True)
        model.eval()
        print(epoch, run_epoch(model, batches_b, optimizer, False))
        model.train()
""",
    ),
    # self.G, built from a module class in __init__, sampled after loading its weights
    Example(
        """
import torch
import torch.nn as nn


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 64), nn.BatchNorm1d(64), nn.Tanh())

    def forward(self, z):
        return self.body(z)


class GANModel:
    def __init__(self, device):
        self.G = Generator().to(device)
        self.g_opt = torch.optim.Adam(self.G.parameters(), lr=2e-4)

    def evaluate(self, path, n):
        self.G.load_state_dict(torch.load(path))
        z = torch.randn(n, 16)
        with torch.no_grad():
            return self.G(z)
""",
        fixed="""
import torch
import torch.nn as nn


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 64), nn.BatchNorm1d(64), nn.Tanh())

    def forward(self, z):
        return self.body(z)


class GANModel:
    def __init__(self, device):
        self.G = Generator().to(device)
        self.g_opt = torch.optim.Adam(self.G.parameters(), lr=2e-4)

    def evaluate(self, path, n):
        self.G.eval()
        self.G.load_state_dict(torch.load(path))
        z = torch.randn(n, 16)
        with torch.no_grad():
            return self.G(z)
""",
    ),
    # net = net.to(device) is the same module (in training mode), not an unknown new one
    Example(
        """
import torch
import torch.nn as nn

device = "cuda" if torch.cuda.is_available() else "cpu"
net = nn.Sequential(nn.Linear(20, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 2))
net = net.to(device)
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()
train_loader = torch.utils.data.DataLoader(torch.randn(64, 20), batch_size=8)
test_loader = torch.utils.data.DataLoader(torch.randn(16, 20), batch_size=8)

for epoch in range(5):
    for step, x in enumerate(train_loader):
        optimizer.zero_grad()
        loss = criterion(net(x.to(device)), torch.zeros(len(x), dtype=torch.long))
        loss.backward()
        optimizer.step()
        if (step + 1) % 4 == 0:
            with torch.no_grad():
                for tx in test_loader:
                    print(net(tx.to(device)).argmax(1))
""",
        fixed="""
import torch
import torch.nn as nn

device = "cuda" if torch.cuda.is_available() else "cpu"
net = nn.Sequential(nn.Linear(20, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 2))
net = net.to(device)
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()
train_loader = torch.utils.data.DataLoader(torch.randn(64, 20), batch_size=8)
test_loader = torch.utils.data.DataLoader(torch.randn(16, 20), batch_size=8)

for epoch in range(5):
    for step, x in enumerate(train_loader):
        net.train()
        optimizer.zero_grad()
        loss = criterion(net(x.to(device)), torch.zeros(len(x), dtype=torch.long))
        loss.backward()
        optimizer.step()
        if (step + 1) % 4 == 0:
            net.eval()
            with torch.no_grad():
                for tx in test_loader:
                    print(net(tx.to(device)).argmax(1))
""",
    ),
    # one test batch drawn with next(enumerate(test_loader)) rebinds the training loop's variable
    # every few steps and is evaluated in training mode
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
            with torch.no_grad():
                accuracy = (net(inputs).argmax(1) == labels).float().mean()
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
        net.train()
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
            print(epoch, i, accuracy.item())
""",
    ),
    # a model made and returned by a function of the file (weights loaded, mode untouched)
    # starts in training mode where the function is called
    Example(
        """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.3), nn.Linear(8, 2))

    def forward(self, x):
        return self.body(x)


def load_model(path):
    m = Net()
    m.load_state_dict(torch.load(path))
    return m


model = load_model("weights.pt")


def predict(x):
    with torch.no_grad():
        return model(x).argmax(1)
""",
        fixed="""
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.3), nn.Linear(8, 2))

    def forward(self, x):
        return self.body(x)


def load_model(path):
    m = Net()
    m.load_state_dict(torch.load(path))
    return m


model = load_model("weights.pt")


def predict(x):
    model.eval()
    with torch.no_grad():
        return model(x).argmax(1)
""",
    ),
    # a helper shared with training runs the forward: the validation call of it evaluates the
    # model in the training mode the epoch set (reported at the call); the fix switches it to
    # eval mode in validate() and back at the start of the training step
    Example(
        """
import torch
import torch.nn.functional as F


class Trainer:
    def __init__(self, model, optimizer, loaders):
        self.model = model
        self.optimizer = optimizer
        self.loaders = loaders

    def _forward_pass(self, x, y):
        output = self.model(x)
        return output, F.cross_entropy(output, y)

    def train_epoch(self):
        self.model.train()
        for i, (x, y) in enumerate(self.loaders["train"]):
            _, loss = self._forward_pass(x, y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            if i % 100 == 0:
                print(self.validate(self.loaders["val"]))

    def validate(self, val_loader):
        total = 0.0
        with torch.no_grad():
            for x, y in val_loader:
                _, loss = self._forward_pass(x, y)
                total += loss.item()
        return total
""",
        fixed="""
import torch
import torch.nn.functional as F


class Trainer:
    def __init__(self, model, optimizer, loaders):
        self.model = model
        self.optimizer = optimizer
        self.loaders = loaders

    def _forward_pass(self, x, y):
        output = self.model(x)
        return output, F.cross_entropy(output, y)

    def train_epoch(self):
        self.model.train()
        for i, (x, y) in enumerate(self.loaders["train"]):
            self.model.train()
            _, loss = self._forward_pass(x, y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            if i % 100 == 0:
                print(self.validate(self.loaders["val"]))

    def validate(self, val_loader):
        total = 0.0
        self.model.eval()
        with torch.no_grad():
            for x, y in val_loader:
                _, loss = self._forward_pass(x, y)
                total += loss.item()
        return total
""",
    ),
    # a method that trains the model through one helper and evaluates it through another, with
    # no switch anywhere: the model is evaluated in the mode it is trained in
    Example(
        """
import torch
import torch.nn.functional as F


class Pipeline:
    def __init__(self, model, train_loader, val_loader):
        self.model = model
        self.train_loader = train_loader
        self.val_loader = val_loader

    def _train_loop(self):
        for x, y in self.train_loader:
            loss = F.cross_entropy(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()

    def _val_loop(self):
        correct = 0
        with torch.no_grad():
            for x, y in self.val_loader:
                correct += (self.model(x).argmax(1) == y).sum().item()
        return correct

    def fit(self, epochs):
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        for epoch in range(epochs):
            self._train_loop()
            print(epoch, self._val_loop())
""",
        fixed="""
import torch
import torch.nn.functional as F


class Pipeline:
    def __init__(self, model, train_loader, val_loader):
        self.model = model
        self.train_loader = train_loader
        self.val_loader = val_loader

    def _train_loop(self):
        for x, y in self.train_loader:
            loss = F.cross_entropy(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()

    def _val_loop(self):
        correct = 0
        self.model.eval()
        with torch.no_grad():
            for x, y in self.val_loader:
                correct += (self.model(x).argmax(1) == y).sum().item()
        return correct

    def fit(self, epochs):
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        for epoch in range(epochs):
            self.model.train()
            self._train_loop()
            print(epoch, self._val_loop())
""",
    ),
    # generate() on a parameter annotated as an HF model
    Example(
        """
import torch
from transformers import VisionEncoderDecoderModel


def predict(model: VisionEncoderDecoderModel, loader):
    texts = []
    with torch.no_grad():
        for batch in loader:
            texts.append(model.generate(batch["pixel_values"], max_new_tokens=32))
    return texts
""",
        fixed="""
import torch
from transformers import VisionEncoderDecoderModel


def predict(model: VisionEncoderDecoderModel, loader):
    model.eval()
    texts = []
    with torch.no_grad():
        for batch in loader:
            texts.append(model.generate(batch["pixel_values"], max_new_tokens=32))
    return texts
""",
    ),
    # ``model.forward(x)`` on a module class of this file is a forward pass too
    Example(
        """
import torch
from torch import nn

train_loader = torch.utils.data.DataLoader(list(range(8)), batch_size=4)
test_loader = torch.utils.data.DataLoader(list(range(8)), batch_size=4)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(10, 100), nn.ReLU(), nn.Dropout(0.2), nn.Linear(100, 10))

    def forward(self, x):
        return self.body(x)


model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model.forward(x), y)
        loss.backward()
        optimizer.step()

correct = 0
with torch.no_grad():
    for x, y in test_loader:
        correct += (model.forward(x).argmax(1) == y).sum().item()
print(correct)
""",
        fixed="""
import torch
from torch import nn

train_loader = torch.utils.data.DataLoader(list(range(8)), batch_size=4)
test_loader = torch.utils.data.DataLoader(list(range(8)), batch_size=4)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(10, 100), nn.ReLU(), nn.Dropout(0.2), nn.Linear(100, 10))

    def forward(self, x):
        return self.body(x)


model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model.forward(x), y)
        loss.backward()
        optimizer.step()

correct = 0
model.eval()
with torch.no_grad():
    for x, y in test_loader:
        correct += (model.forward(x).argmax(1) == y).sum().item()
print(correct)
""",
    ),
    # a parameter holding the model's name, rebound to the model a factory builds (training
    # mode): the fix goes where the name holds the model, not at the top of the function
    Example(
        """
import torch
from torch import nn


class SegNet(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.body = nn.Sequential(nn.Conv1d(4, 32, 1), nn.BatchNorm1d(32), nn.ReLU(), nn.Conv1d(32, classes, 1))

    def forward(self, x):
        return self.body(x)


def build(name, pretrained=True):
    net = SegNet(19)
    if pretrained:
        net.load_state_dict(torch.load(f"{name}.pt"))
    return net


def get_inference(model, points):
    model = build(model, pretrained=True)
    model = model.to("cpu")
    with torch.no_grad():
        return model(points).argmax(1)


if __name__ == "__main__":
    print(get_inference("segnet", torch.randn(1, 4, 1000)))
""",
        fixed="""
import torch
from torch import nn


class SegNet(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.body = nn.Sequential(nn.Conv1d(4, 32, 1), nn.BatchNorm1d(32), nn.ReLU(), nn.Conv1d(32, classes, 1))

    def forward(self, x):
        return self.body(x)


def build(name, pretrained=True):
    net = SegNet(19)
    if pretrained:
        net.load_state_dict(torch.load(f"{name}.pt"))
    return net


def get_inference(model, points):
    model = build(model, pretrained=True)
    model = model.to("cpu")
    model.eval()
    with torch.no_grad():
        return model(points).argmax(1)


if __name__ == "__main__":
    print(get_inference("segnet", torch.randn(1, 4, 1000)))
""",
    ),
]
