"""The on-disk candidate cache trusts nothing it did not write itself.

An attacker who can put files where the cache looks plants code (a pickle that runs when read), a
symbolic link (followed on write, it would overwrite what it points to) or a generation of their own
making (a column dropped, capacities inflated, no column at all: a wrong "optimum" that the verifier
accepts). Each is refused with a warning and the solve gives the uncached optimum of the Mélange toy,
$6.70/h; a folder or an entry that others may write is not used; a generation read back gives the
uncached plan, byte for byte.
"""

from __future__ import annotations

import gzip
import json
import os
import pickle
import shutil
import warnings
from pathlib import Path

import pytest

import placement
from placement.core.pipeline.solve import solve
from placement.core.replicas import candidate_cache, candidates

BACKEND = "highs"
TOY = Path(placement.__file__).parent / "instances" / "melange-toy.yaml"
OPTIMUM_USD_PER_HOUR = 6.70


def _solve(folder: Path | None, monkeypatch) -> tuple[placement.Plan, list[str]]:
    """The Mélange toy's plan in a process that starts with nothing kept and ``folder`` as its cache
    (None: no cache), and the cache's warnings."""
    monkeypatch.setenv(candidate_cache.CACHE_DIR_ENV, "" if folder is None else str(folder))
    candidate_cache.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan = solve(placement.load_instance(TOY), backend=BACKEND)
    candidate_cache.clear()
    return plan, [str(w.message) for w in caught if "candidate cache" in str(w.message)]


@pytest.fixture(scope="module")
def uncached() -> placement.Plan:
    with pytest.MonkeyPatch.context() as mp:
        plan, _ = _solve(None, mp)
    assert plan.status == "optimal" and plan.cost_usd_per_hour == pytest.approx(OPTIMUM_USD_PER_HOUR)
    return plan


def _entries(folder: Path) -> list[Path]:
    """The generations in ``folder``: every file but the key and temporary files."""
    return sorted(p for p in folder.iterdir() if not p.name.startswith(".") and p.name != "hmac.key")


def _names(tmp_path: Path, monkeypatch) -> list[str]:
    """The names the cache reads and writes for the toy: those a solve writes in a fresh folder."""
    _solve(tmp_path / "learn", monkeypatch)
    names = [p.name for p in _entries(tmp_path / "learn")]
    assert names
    return names


def _private_folder(path: Path) -> Path:
    path.mkdir(mode=0o700)
    return path


class _Marker:
    """Unpickling this touches ``path``: code run by reading a file."""

    def __init__(self, path: Path):
        self.path = path

    def __reduce__(self):
        return Path.touch, (self.path,)


def test_a_planted_pickle_is_never_run(tmp_path, monkeypatch, uncached):
    marker = tmp_path / "code-ran"
    folder = _private_folder(tmp_path / "cache")
    for name in _names(tmp_path, monkeypatch):
        (folder / name).write_bytes(pickle.dumps(_Marker(marker)))
    plan, said = _solve(folder, monkeypatch)
    assert not marker.exists()
    assert plan.canonical_json() == uncached.canonical_json()
    assert said and all("is not used" in s for s in said)


def test_a_planted_fifo_is_not_waited_on(tmp_path, monkeypatch, uncached):
    """A named pipe where an entry belongs would block a plain open until someone writes to it."""
    folder = _private_folder(tmp_path / "cache")
    names = _names(tmp_path, monkeypatch)
    for name in names:
        os.mkfifo(folder / name, 0o600)
    plan, said = _solve(folder, monkeypatch)
    assert plan.canonical_json() == uncached.canonical_json()
    assert said and all("not a regular file" in s for s in said)
    assert all((folder / n).is_file() for n in names)  # replaced by the generation


def test_a_planted_symbolic_link_is_replaced_not_followed(tmp_path, monkeypatch, uncached):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    folder = _private_folder(tmp_path / "cache")
    names = _names(tmp_path, monkeypatch)
    for name in names:
        (folder / name).symlink_to(victim)
    plan, said = _solve(folder, monkeypatch)
    assert victim.read_text() == "precious"
    assert plan.canonical_json() == uncached.canonical_json()
    assert any("symbolic link" in s for s in said)
    assert all((folder / n).is_file() and not (folder / n).is_symlink() for n in names)  # rewritten in place


def _drop_used_column(cands, plan):
    used = plan.pools[0].column
    return candidates.Candidates(configs={k: v for k, v in cands.configs.items() if k != used},
                                 columns=[c for c in cands.columns if c.name != used],
                                 generated=cands.generated, feasible=cands.feasible, network_free=cands.network_free)


def _inflate_capacities(cands, plan):
    columns = [c.model_copy(update={"capacity": {s: 10 * v for s, v in c.capacity.items()}}) for c in cands.columns]
    return candidates.Candidates(configs=cands.configs, columns=columns, generated=cands.generated,
                                 feasible=cands.feasible, network_free=cands.network_free)


def _empty(cands, plan):
    return candidates.Candidates(network_free=cands.network_free)


@pytest.mark.parametrize("change", [_drop_used_column, _inflate_capacities, _empty])
def test_a_generation_written_without_the_folders_key_is_refused(tmp_path, monkeypatch, uncached, change):
    """The attacker runs the same code on a generation of their own making, then puts its entries in
    place of the victim's."""
    folder = tmp_path / "cache"
    _solve(folder, monkeypatch)  # the victim's own entries, and (now) its key

    def forged(ctx, **options):
        return change(candidates.generate(ctx, **options), uncached)

    with monkeypatch.context() as mp:
        mp.setattr(candidate_cache, "generate", forged)
        _solve(tmp_path / "attacker", mp)
    entries = _entries(tmp_path / "attacker")
    assert [p.name for p in entries] == [p.name for p in _entries(folder)]
    for entry in entries:
        shutil.copyfile(entry, folder / entry.name)
    plan, said = _solve(folder, monkeypatch)
    assert plan.canonical_json() == uncached.canonical_json()
    assert said and all("MAC is wrong" in s for s in said)


def _group_writable(folder: Path) -> None:
    folder.chmod(0o770)


def _a_file(folder: Path) -> None:
    shutil.rmtree(folder)
    folder.write_text("not a folder")


def _a_link_to_a_private_folder(folder: Path) -> None:
    target = folder.with_name("target")
    folder.rename(target)
    folder.symlink_to(target, target_is_directory=True)


def _key_others_may_read(folder: Path) -> None:
    (folder / "hmac.key").chmod(0o644)


def _key_a_link(folder: Path) -> None:
    """A key the attacker knows, through a link (the file it names is private, as the real key)."""
    known = folder.with_name("known.key")
    known.write_bytes(b"k" * 32)
    known.chmod(0o600)
    (folder / "hmac.key").unlink()
    (folder / "hmac.key").symlink_to(known)


@pytest.mark.parametrize("spoil", [_group_writable, _a_file, _a_link_to_a_private_folder, _key_others_may_read,
                                   _key_a_link])
def test_a_folder_others_could_change_is_not_used(tmp_path, monkeypatch, uncached, spoil):
    folder = tmp_path / "cache"
    _solve(folder, monkeypatch)
    for entry in _entries(folder):
        entry.unlink()
    spoil(folder)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    plan, said = _solve(folder, monkeypatch)
    assert plan.canonical_json() == uncached.canonical_json()
    assert said and all("folder" in s and "is not used" in s for s in said)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing written there


def _others_may_write(entry: Path) -> None:
    entry.chmod(0o666)


def _owned_by_another_user(entry: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    os.chown(entry, os.geteuid() + 4242, -1)


@pytest.mark.parametrize("spoil", [_others_may_write, _owned_by_another_user])
def test_an_entry_others_could_change_is_generated_again(tmp_path, monkeypatch, uncached, spoil):
    folder = tmp_path / "cache"
    _solve(folder, monkeypatch)
    for entry in _entries(folder):
        spoil(entry)
    plan, said = _solve(folder, monkeypatch)
    assert plan.canonical_json() == uncached.canonical_json()
    assert candidate_cache.cache_info()["disk_hits"] == 0
    assert said and all("is not used" in s for s in said)
    for entry in _entries(folder):  # written again, privately
        st = entry.stat()
        assert st.st_uid == os.geteuid() and st.st_mode & 0o077 == 0


def test_a_generation_read_back_gives_the_uncached_plan(tmp_path, monkeypatch, uncached):
    folder = tmp_path / "cache"
    _solve(folder, monkeypatch)
    (entry,) = _entries(folder)
    header, body = entry.read_bytes().split(b"\n", 1)
    doc = json.loads(gzip.decompress(body))  # data: gzip-compressed JSON
    assert doc["format"] == "placement-candidates/1" and header.startswith(b"placement-cache 1 hmac-sha256 ")
    assert folder.stat().st_mode & 0o777 == 0o700 and entry.stat().st_mode & 0o777 == 0o600
    monkeypatch.setenv(candidate_cache.CACHE_DIR_ENV, str(folder))
    candidate_cache.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a good entry gives no warning
        plan = solve(placement.load_instance(TOY), backend=BACKEND)
    assert candidate_cache.cache_info()["disk_hits"] == 1 and candidate_cache.cache_info()["misses"] == 0
    candidate_cache.clear()
    assert plan.canonical_json() == uncached.canonical_json()


def test_the_cli_says_why_an_entry_is_not_used(tmp_path, monkeypatch):
    """A refused entry is a ``warning:`` line on stderr, and the command succeeds."""
    from typer.testing import CliRunner

    from placement.cli.app import app

    folder = tmp_path / "cache"
    _solve(folder, monkeypatch)
    (entry,) = _entries(folder)
    entry.write_bytes(pickle.dumps(_Marker(tmp_path / "code-ran")))
    monkeypatch.setenv(candidate_cache.CACHE_DIR_ENV, "")
    candidate_cache.clear()
    result = CliRunner().invoke(app, ["solve", str(TOY), "--solver", BACKEND, "-q", "--cache-dir", str(folder)])
    candidate_cache.clear()
    assert result.exit_code == 0, result.output
    assert f"warning: candidate cache entry {entry} is not used" in result.output.replace("\n", "")
    assert not (tmp_path / "code-ran").exists()
    assert "Traceback" not in result.output


def _awkward_generation():
    """The toy's generation, and two columns of floats that a decimal writer could get wrong."""
    from placement.core.instance.context import Context
    from solvers.problem import Column, Part

    cands = candidates.generate(Context.of(placement.load_instance(TOY)), workers=1)
    cfg = next(iter(cands.configs.values()))
    extra = [Column(name="awkward-1", parts=[Part(resource="a10g@1", units=1), Part(resource="a100-80gb@1", units=1)],
                    capacity={"s|aggregated|serve": 0.1 + 0.2, "t|aggregated|serve": 5e-324},
                    pair_bytes_per_s=1.7976931348623157e308, pair_max_latency_s=2.5e-6 / 3),
             Column(name="awkward-2", parts=[Part(resource="a10g@1", units=1)], capacity={"s|aggregated|serve": 1 / 3},
                    pair_bytes_per_s=-0.0, pair_max_latency_s=float("inf"))]
    return candidates.Candidates(configs={**cands.configs, **{c.name: cfg for c in extra}},
                                 columns=cands.columns + extra, generated=cands.generated, feasible=cands.feasible)


def test_floats_read_back_bit_for_bit():
    from placement.core.replicas.candidate_codec import decode, encode

    cands = _awkward_generation()
    back = decode(encode(cands))

    def bits(c):
        return [c.name, [(p.resource, p.units) for p in c.parts], [(s, v.hex()) for s, v in c.capacity.items()],
                c.pair_bytes_per_s.hex(), c.pair_max_latency_s.hex()]

    assert [bits(c) for c in back.columns] == [bits(c) for c in cands.columns]
    assert back.configs == cands.configs and list(back.configs) == list(cands.configs)
    assert back.configs["awkward-1"] is back.configs["awkward-2"]  # one record, as written
    assert (back.generated, back.feasible, back.network_free) == (cands.generated, cands.feasible, False)


@pytest.mark.parametrize("spoil", [
    lambda doc: doc["columns"].update(config=[-1] * len(doc["columns"]["config"])),  # from the end
    lambda doc: doc["columns"].update(config=[len(doc["configs"]["kind"])] * len(doc["columns"]["config"])),
    lambda doc: doc["layouts"].update(gpus=doc["layouts"].pop("chips")),  # a record's field renamed
    lambda doc: doc["columns"]["capacity"][0].append(1.0),  # a capacity without its step
    lambda doc: doc.update(format="placement-candidates/0"),
], ids=["negative-row", "row-past-the-end", "renamed-field", "capacity-without-step", "other-version"])
def test_a_document_of_another_shape_does_not_decode(spoil):
    from placement.core.replicas.candidate_codec import decode, encode

    doc = json.loads(encode(_awkward_generation()))
    spoil(doc)
    with pytest.raises(ValueError):
        decode(json.dumps(doc).encode())
