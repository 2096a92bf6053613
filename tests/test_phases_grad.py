"""Is grad on here? (mllint/semantics/phases/grad.py)"""

from __future__ import annotations

from phases_helpers import forward, phases_of


def test_protected_regions():
    ph = phases_of(
        """
        import torch
        from contextlib import contextmanager

        @contextmanager
        def frozen():
            with torch.no_grad():
                yield

        @torch.inference_mode()
        def a(x):
            return model_a(x)

        def b(x):
            return model_b(x)

        def c(x, phase):
            with torch.set_grad_enabled(phase == "train"):
                model_c(x)
            with frozen():
                model_d(x)
            with torch.no_grad() if not training else contextlib.nullcontext():
                model_e(x)
            with torch.enable_grad():
                model_f(x)
            model_g(x)

        with torch.no_grad():
            b(x)
        """
    )
    protected = {e.ref: ph.protected(e) for e in ph.forwards()}
    assert protected == {
        "model_a": True, "model_b": True, "model_c": True, "model_d": True, "model_e": True, "model_f": False, "model_g": False,
    }


def test_helpers_count_only_when_every_caller_turns_grad_off():
    ph = phases_of(
        """
        import torch
        def helper(x):
            return net(x)
        with torch.no_grad():
            helper(a)
        helper(b)
        """
    )
    assert not ph.protected(forward(ph, "net"))


def test_set_grad_enabled_statement_turns_grad_off_for_the_script():
    ph = phases_of(
        """
        import torch
        torch.set_grad_enabled(False)
        def predict(x):
            return model(x)
        """
    )
    assert ph.protected(forward(ph, "model"))


def test_frozen_models():
    ph = phases_of(
        """
        import torch
        vgg.requires_grad_(False)
        for p in backbone.parameters():
            p.requires_grad = False
        """
    )
    assert ph.frozen("vgg", "<module>")
    assert ph.frozen("backbone.layer1", "<module>")
    assert not ph.frozen("head", "<module>")


# --- modes -----------------------------------------------------------------------------------------------------




def test_an_override_is_called_where_the_base_class_calls_self_method():
    ph = phases_of(
        """
        import torch

        class Base:
            def translate_batch(self, batch):
                with torch.no_grad():
                    return self._score(batch)

            def _score(self, batch):
                raise NotImplementedError

        class Translator(Base):
            def _score(self, batch):
                return self._decode(batch)

            def _decode(self, batch):
                return self.model.decoder(batch)
        """
    )
    assert [s.ctx.scope for s in ph.call_sites("Translator._score")] == ["Base.translate_batch"]
    assert "Translator._decode" in ph.grad_off_functions()


def test_grad_switched_off_by_a_helper_given_a_constant():
    source = """
    import torch
    def set_grad(flag):
        torch.set_grad_enabled(flag)
    def evaluate(model, loader):
        set_grad({value})
        return [model(x) for x in loader]
    """
    ph = phases_of(source.format(value="False"))
    assert ph.protected(forward(ph, "model"))
    ph = phases_of(source.format(value="True"))
    assert not ph.protected(forward(ph, "model"))
