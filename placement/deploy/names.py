"""The names and words deployment files are made of: Kubernetes names, label values, shell lines.

Every name a plan gives (instance, pool, class, chip, domain group, model)
follows the instance-name rule (:data:`placement.core.instance.schema.Name`, checked when
the plan is read: no spaces, quotes, ``$`` or newlines). Here they become

* Kubernetes object names (RFC 1123 labels: lower-case alphanumerics and ``-``,
  at most 63 characters), by :func:`dns_name`. A name that the normalisation
  changes (upper case, ``_``, ``.``, ``|``, truncation) gets a suffix hashed
  from the original parts, so ``a10g_pool``, ``a10g-pool`` and ``A10G.pool``
  stay three names; :func:`require_unique` refuses whatever still collides
  (one object or file would overwrite another).
* label values (at most 63 characters, ``[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?``),
  by :func:`label_value`: a valid value is kept, any other is shortened with
  the same kind of hash suffix.
* words of a shell line (``bench.sh``, a ``sh -c`` command), by
  :func:`shell_line`: each word quoted with :func:`shlex.quote`, except a
  :class:`ShellWord`, which this package writes itself (a quoted variable
  reference) and never takes from a plan; :func:`shell_comment` keeps a
  comment on its line.

Examples
--------
>>> dns_name("fleet", "pool-01", "a10g-pool")
'fleet-pool-01-a10g-pool'
>>> dns_name("fleet", "pool-01", "a10g_pool") != dns_name("fleet", "pool-01", "A10G.pool")
True
>>> label_value("h100-hgx"), len(label_value("g" * 63 + "-0"))
('h100-hgx', 63)
>>> shell_line(["aiperf", "-m", "$(touch x)", ShellWord('"$ENDPOINT"')])
'aiperf -m \\'$(touch x)\\' "$ENDPOINT"'
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Iterable

from placement.core.instance.errors import InputError

__all__ = ["MAX_NAME", "ShellWord", "check_chips_per_node", "check_image", "dns_name", "label_value",
           "parse_chips_per_node", "require_unique", "shell_comment", "shell_line"]

#: Longest Kubernetes object name and label value written (an RFC 1123 label).
MAX_NAME = 63
#: Hex digits of the suffix that keeps normalised names apart (2^-32 per pair of names, and collisions
#: left are refused by require_unique).
_DIGEST = 8
_LABEL = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")


def _digest(parts: tuple[str, ...]) -> str:
    """Hex digest of the original parts (NUL-separated: no name holds one, so ("a-b", "c") ≠ ("a", "b-c"))."""
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:_DIGEST]


def _suffixed(text: str, parts: tuple[str, ...], strip: str) -> str:
    head = text[:MAX_NAME - _DIGEST - 1].strip(strip)
    return f"{head}-{_digest(parts)}" if head else _digest(parts)


def dns_name(*parts: str) -> str:
    """A Kubernetes object name of ``parts`` joined by ``-``: kept when already one, else normalised + hash.

    Examples
    --------
    >>> dns_name("rubin-lpx", "pool-03", "nvl72")
    'rubin-lpx-pool-03-nvl72'
    >>> dns_name("Rubin-LPX", "decode|pd")
    'rubin-lpx-decode-pd-cd53f7c2'
    """
    joined = "-".join(parts)
    text = re.sub(r"[^a-z0-9]+", "-", joined.lower()).strip("-")
    if text == joined and len(text) <= MAX_NAME:
        return text
    return _suffixed(text, parts, "-")


def label_value(text: str) -> str:
    """A Kubernetes label value for ``text``: itself when valid, else a shortened form + hash.

    Examples
    --------
    >>> label_value("A10G.pool"), label_value("a10g_")
    ('A10G.pool', 'a10g-a8239c96')
    """
    if len(text) <= MAX_NAME and _LABEL.fullmatch(text):
        return text
    return _suffixed(re.sub(r"[^A-Za-z0-9_.-]+", "-", text), (text,), "-_.")


def require_unique(named: Iterable[tuple[str, str]], what: str, field: str) -> None:
    """Refuse two sources (``(name, what it was made from)``) given one ``what`` name: one would overwrite the other.

    Examples
    --------
    >>> require_unique([("a-b-c", "pool a-b in c"), ("a-b-c", "pool a in b-c")], "object name", "pools")
    Traceback (most recent call last):
    ...
    placement.core.instance.errors.InputError: pools: pool a-b in c and pool a in b-c would both be the object name 'a-b-c'; rename one
    """
    seen: dict[str, str] = {}
    for name, source in named:
        if name in seen:
            raise InputError(f"{seen[name]} and {source} would both be the {what} {name!r}; rename one", field=field)
        seen[name] = source


class ShellWord(str):
    """A word :func:`shell_line` writes as it is: built by this package (``"$OUT"/…``), never read from a plan."""

    __slots__ = ()


def shell_line(words: Iterable[str]) -> str:
    """``words`` as one shell command line: every word quoted (:func:`shlex.quote`) but a :class:`ShellWord`."""
    return " ".join(w if isinstance(w, ShellWord) else shlex.quote(w) for w in words)


def shell_comment(text: str) -> str:
    """``text`` as one shell comment line: control characters (a newline would end the comment) become ``?``.

    Examples
    --------
    >>> shell_comment("class chat\\ntouch x")
    '# class chat?touch x'
    """
    return "# " + re.sub(r"[\x00-\x1f\x7f]", "?", text)


#: A container image reference (the distribution/reference grammar): ``[domain[:port]/]path[:tag][@digest]``,
#: e.g. ``nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.4.1``.
_PATH_PART = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::[0-9]+)?"
_IMAGE = re.compile(rf"(?:{_DOMAIN}/)?{_PATH_PART}(?:/{_PATH_PART})*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})?"
                    r"(?:@sha256:[0-9a-f]{64})?")


def parse_chips_per_node(value: str | None) -> dict[str, int]:
    """``"h100=8,rubin=4"`` → ``{"h100": 8, "rubin": 4}``; errors name ``--chips-per-node``.

    Examples
    --------
    >>> parse_chips_per_node("h100=8, rubin=4")
    {'h100': 8, 'rubin': 4}
    >>> parse_chips_per_node("h100")
    Traceback (most recent call last):
    ...
    placement.core.instance.errors.InputError: --chips-per-node: expected chip=N (N >= 1), got 'h100'
    """
    from placement.core.instance.schema import NAME_PATTERN

    out: dict[str, int] = {}
    for item in (v.strip() for v in (value or "").split(",")):
        if not item:
            continue
        chip, _, n = item.partition("=")
        if not n.strip().isdigit() or int(n) < 1 or not re.fullmatch(NAME_PATTERN, chip.strip()):
            raise InputError(f"expected chip=N (N >= 1), got {item!r}", field="--chips-per-node")
        out[chip.strip()] = int(n)
    return out


def check_chips_per_node(chips_per_node: dict[str, int] | None) -> None:
    """Refuse a chips-per-node map whose keys are not names or whose counts are not whole numbers ≥ 1."""
    from placement.core.instance.schema import NAME_PATTERN

    for chip, n in (chips_per_node or {}).items():
        if not (isinstance(chip, str) and re.fullmatch(NAME_PATTERN, chip)) or not isinstance(n, int) or n < 1:
            raise InputError(f"expected chip=N (N >= 1), got {chip!r}={n!r}", field="--chips-per-node")


def check_image(image: str | None) -> None:
    """Refuse an ``--image`` that is not a container image reference (``registry/path:tag``).

    Examples
    --------
    >>> check_image("nvcr.io/nvidia/ai-dynamo/vllm-runtime:latest")
    >>> check_image("vllm/vllm-openai:v0.9; rm -rf /")
    Traceback (most recent call last):
    ...
    placement.core.instance.errors.InputError: --image: expected a container image reference (registry/path:tag), got 'vllm/vllm-openai:v0.9; rm -rf /'
    """
    if image is not None and not (len(image) <= 255 and _IMAGE.fullmatch(image)):
        raise InputError(f"expected a container image reference (registry/path:tag), got {image!r}",
                         field="--image")
