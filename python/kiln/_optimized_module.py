"""kiln.compile(module): a Module that forwards everything to the original and runs its forward
compiled (PyTorch's OptimizedModule). docs/compile.md, "Compiling a module"."""
from .nn import module as _module


class OptimizedModule(_module.Module):
    """The result of kiln.compile(module). It is a Module whose only child is the original,
    `_orig_mod` (so state_dict() keys carry the "_orig_mod." prefix, as PyTorch's do); calling it
    runs the original's forward (hooks included) through kiln.compile; every other attribute and
    method (.eval(), .to(), .parameters(), user methods such as .generate()) is the original's,
    run eagerly."""

    def __init__(self, mod, compiled):
        super().__init__()
        self._orig_mod = mod
        self.__dict__["_compiled"] = compiled
        self.__dict__["training"] = mod.training

    def forward(self, *args, **kwargs):
        # Hooks registered on the wrapper run around this compiled call; the original's own hooks
        # run inside it (they are part of what is traced).
        return self.__dict__["_compiled"](*args, **kwargs)

    def __getattr__(self, name):
        if name == "_orig_mod":
            return self.__dict__["_modules"]["_orig_mod"]
        return getattr(self.__dict__["_modules"]["_orig_mod"], name)

    def explain(self):
        """What capture did for this module's forward: see kiln.explain."""
        return self.__dict__["_compiled"].explain()

    def __repr__(self):
        return f"OptimizedModule({self._orig_mod!r})"

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(dir(self._orig_mod)))
