"""Components named by import path, and the conventions they are constructed with.

A preset override (``summarizer="mypkg.mod:MySummarizer"``), a sweep spec (``memory =
"mypkg.mod:MyMemory"``) or a user's own code can name a Python object as ``module:attribute``.
This module is the one place that imports such a name and calls it, so every caller gets the
same rules and the same one-line errors:

- **Import.** ``"pkg.mod:Name"`` (or ``"pkg.mod:Outer.Inner"``); an import error, a missing
  attribute or a malformed path is a `ConfigError` naming the path and what went wrong.
- **Construction.** The object is called with the user's parameters plus, for each *convention*
  its signature names explicitly (``model``, ``context_window``, ``counter``, ``on_event``), the
  value the caller has for it. A parameter the user gives wins over a convention; a convention
  the signature does not name is not passed (``**kwargs`` does not count: a class that forwards
  its keyword arguments elsewhere must not receive ones it never asked for). Any exception from
  the constructor is a one-line `ConfigError`.
- **Capabilities.** An optional ``capabilities`` attribute (`Capabilities`); without one the
  conservative reading, `UNDECLARED`: needs the network, costs money, not deterministic.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any

from rollsum.capabilities import Capabilities
from rollsum.errors import ConfigError

CONVENTIONS: tuple[str, ...] = ("model", "context_window", "counter", "on_event")
"""Constructor parameters a component gets when its signature names them."""

UNDECLARED = Capabilities(offline=False, free=False, deterministic=False, follows_prompt=True)
"""What a component without a ``capabilities`` attribute is taken to be: the reading under which
no harness decision (cost estimate, caching, which comparisons mean something) goes wrong."""

_IDENT = r"[A-Za-z_]\w*"
_PATH = re.compile(rf"^{_IDENT}(?:\.{_IDENT})*:{_IDENT}(?:\.{_IDENT})*$")


def is_import_path(value: object) -> bool:
    """``"package.module:Attribute"``: a name no preset, summarizer or model spec can have."""
    return isinstance(value, str) and bool(_PATH.match(value))


def short_name(path: str) -> str:
    """The attribute's own name (``MyMemory`` for ``"pkg.mod:MyMemory"``), for labels."""
    return path.rpartition(":")[2].rpartition(".")[2]


def one_line(err: BaseException) -> str:
    """An exception as one line (pydantic's and others' multi-line messages joined)."""
    text = " ".join(part.strip() for part in str(err).splitlines() if part.strip())
    text = f"{type(err).__name__}: {text}" if text else type(err).__name__
    return text if len(text) <= 400 else text[:399] + "…"


def load(path: str) -> Any:
    """The object an import path names. Every failure is one `ConfigError` line."""
    if not is_import_path(path):
        raise ConfigError(f"{path!r}: expected an import path 'package.module:Attribute'")
    module_name, _, attr_path = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as err:  # ImportError, or any error the module raises while importing
        hint = "; is it installed, or its folder on PYTHONPATH?" if isinstance(err, ModuleNotFoundError) else ""
        raise ConfigError(f"{path}: cannot import {module_name!r} ({one_line(err)}){hint}") from None
    for i, attr in enumerate(attr_path.split(".")):
        try:
            obj = getattr(obj, attr)
        except AttributeError:
            owner = module_name if i == 0 else f"{module_name}:{'.'.join(attr_path.split('.')[:i])}"
            raise ConfigError(f"{path}: {owner!r} has no attribute {attr!r}") from None
    return obj


def parameters(factory: Callable[..., Any]) -> Mapping[str, inspect.Parameter]:
    try:
        return inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a builtin without a signature: assume it names nothing
        return {}


def accepts(factory: Callable[..., Any], name: str) -> bool:
    """The signature names `name` (keyword-passable; ``**kwargs`` does not count)."""
    p = parameters(factory).get(name)
    return p is not None and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def requires(factory: Callable[..., Any], name: str) -> bool:
    """The signature names `name` and gives it no default."""
    p = parameters(factory).get(name)
    return accepts(factory, name) and p is not None and p.default is inspect.Parameter.empty


def takes_any_keyword(factory: Callable[..., Any]) -> bool:
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters(factory).values())


def construct(factory: Callable[..., Any], params: Mapping[str, Any], conventions: Mapping[str, Any],
              *, what: str) -> Any:
    """Call `factory` with `params` plus the conventions its signature names (None values are
    not passed). `what` names the component in the error (e.g. ``memory pkg.mod:MyMemory``)."""
    kwargs = {k: v for k, v in conventions.items() if v is not None and k not in params and accepts(factory, k)}
    kwargs.update(params)
    try:
        return factory(**kwargs)
    except ConfigError as err:
        raise ConfigError(f"{what}: {err}") from None
    except Exception as err:
        raise ConfigError(f"{what}: {one_line(err)}") from None


def capabilities(component: Any) -> Capabilities:
    """The component's declared `Capabilities` (on the class or the instance), or `UNDECLARED`."""
    declared = getattr(component, "capabilities", None)
    return declared if isinstance(declared, Capabilities) else UNDECLARED
