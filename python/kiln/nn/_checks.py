"""Size arguments of layer constructors, checked where they are given: nn.Linear(4.5, 3) says
Linear(), not the empty() it would call."""
from .._argerrors import _given


def sizes(layer, positive=(), **named):
    """Each named value is an int >= 0 (> 0 for the names in `positive`)."""
    for name, v in named.items():
        if isinstance(v, bool) or not hasattr(v, "__index__"):
            raise TypeError(f"{layer}(): argument '{name}' must be an int, not {_given(v)}")
        low = 1 if name in positive else 0
        if v.__index__() < low:
            raise ValueError(f"{layer}(): argument '{name}' must be an int >= {low}, got {v}")
