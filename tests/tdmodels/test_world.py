import numpy as np
import pytest

from tdmodels.rosters import HeldOutError, open_world
from tdmodels.world import WorldFormatError, load_world, save_world, validate_world


def test_round_trip(dev_world, tmp_path):
    p = save_world(dev_world, tmp_path / "dev.nc")
    back = load_world(p)
    np.testing.assert_array_equal(back["probs"].values, dev_world["probs"].values)
    assert back.attrs["roster"] == "dev"


@pytest.mark.parametrize("mutate, field, words", [
    (lambda ds: ds.drop_vars("utilities"), "utilities", "missing variable"),
    (lambda ds: ds.drop_vars("question_kind"), "question_kind", "missing variable"),
    (lambda ds: ds.assign(features=ds["features"].transpose("persona", "question", "feature")), "features", "dims"),
    (lambda ds: _set(ds, "probs", (0, 0, 0, 1), 1.2), "probs", "outside the open interval"),
    (lambda ds: _set(ds, "probs", (0, 0, 0, 1), 0.0), "probs", "outside the open interval"),
    (lambda ds: _set(ds, "utilities", (0, 3, 2), -0.1), "utilities", "outside [0, 1]"),
    (lambda ds: _set(ds, "features", (5, 2, 6), np.nan), "features", "non-finite"),
    (lambda ds: _set(ds, "features", (5, 2, 6), np.inf), "features", "non-finite"),
    (lambda ds: ds.assign_coords(student=np.zeros(ds.sizes["student"], int)), "student", "not unique"),
    (lambda ds: _attr(ds, "arrival_mode", "sometimes"), "attrs.arrival_mode", "not one of"),
    (lambda ds: _attr(ds, "format_version", 99), "attrs.format_version", "this toolkit reads"),
    # finding 8: inputs that slipped through
    (lambda ds: _attr(ds, "beta", float("nan")), "attrs.beta", "finite positive"),
    (lambda ds: _attr(ds, "beta", -2.0), "attrs.beta", "finite positive"),
    (lambda ds: _attr(ds, "beta", "11"), "attrs.beta", "not a number"),
    (lambda ds: _attr(ds, "bank_size", 0), "attrs.bank_size", "expected an integer in [1, "),
    (lambda ds: _attr(ds, "arrivals", 0), "attrs.arrivals", "expected an integer in [1, "),
    (lambda ds: _attr(ds, "arrivals", -5), "attrs.arrivals", "expected an integer in [1, "),
    (lambda ds: _attr(ds, "arrivals", 3.7), "attrs.arrivals", "not an integer"),
    (lambda ds: _attr(ds, "held_out", 2), "attrs.held_out", "expected 0 or 1"),
    (lambda ds: _attr(ds, "roster", "../escaped"), "attrs.roster", "letters, digits"),
    (lambda ds: ds.assign_coords(persona=["A", "B", "C", "D", "E", "A"], first=["A", "B", "C", "D", "E", "A"],
                                 second=["A", "B", "C", "D", "E", "A"]), "persona", "appears 2 times"),
    (lambda ds: _set(ds, "features", (5, 2, 6), 1e300), "features", "centred with unit sd"),
    (lambda ds: _scale_rater(ds, 1e3), "features", "centred with unit sd"),
    (lambda ds: _attr(_scale_rater(ds, 0.0), "rater_available", 1).pipe(lambda d: _set(d, "features", (0, 0, 6), 1.0)),
     "features", "centred"),
    (lambda ds: _attr(ds, "rater_available", 0), "features", "rater_available = 0"),
    (lambda ds: ds.assign(utilities=ds["utilities"].astype(str)), "utilities", "expected numbers"),
    (lambda ds: ds.isel(student=slice(0, 0)), "utilities", "at least one of each"),
    (lambda ds: ds.isel(persona=slice(0, 2), first=slice(0, 2), second=slice(0, 2),
                        feature=[0, 1, 6]), "utilities", "at least 3 personas"),
    (lambda ds: ds.assign(utilities=ds["utilities"] * 0 + 0.5), "utilities", "score is undefined"),
])
def test_bad_worlds_are_refused_naming_the_field(dev_world, mutate, field, words):
    bad = mutate(dev_world.copy(deep=True))
    with pytest.raises(WorldFormatError) as e:
        validate_world(bad, "bad.nc")
    assert f"field '{field}'" in str(e.value) and words in str(e.value)


def test_bad_file_on_disk(dev_world, tmp_path):
    p = tmp_path / "broken.nc"
    p.write_bytes(b"\x89HDF\r\n\x1a\n" + b"garbage" * 20)
    with pytest.raises(WorldFormatError, match="not a readable netCDF"):
        load_world(p)
    good = save_world(dev_world, tmp_path / "dev.nc")
    data = good.read_bytes()
    (tmp_path / "trunc.nc").write_bytes(data[: len(data) // 3])
    with pytest.raises(WorldFormatError, match="trunc.nc"):
        load_world(tmp_path / "trunc.nc")


def test_held_out_needs_allow_test(env_dirs):
    with pytest.raises(HeldOutError, match="--allow-test"):
        open_world("test_profiles")
    with pytest.raises(HeldOutError):
        open_world("composite")


def _set(ds, name, idx, value):
    arr = ds[name].values.copy()
    arr[idx] = value
    return ds.assign({name: (ds[name].dims, arr)})


def _scale_rater(ds, factor):
    arr = ds["features"].values.copy()
    arr[:, :, -1] *= factor
    return ds.assign(features=(ds["features"].dims, arr))


def test_messages_show_plain_values(dev_world):
    bad = dev_world.copy(deep=True)
    topics = bad["question_topic"].values.copy()
    topics[0] = topics[10]
    bad = bad.assign(question_topic=("question", topics))
    with pytest.raises(WorldFormatError) as e:
        validate_world(bad, "bad.nc")
    assert "np.str_" not in str(e.value) and "topic '" in str(e.value)


def test_digest_is_the_content_not_the_file(dev_world, tmp_path):
    from tdmodels.world import world_digest

    a = save_world(dev_world, tmp_path / "a.nc")
    b = save_world(dev_world, tmp_path / "renamed.nc")
    assert world_digest(load_world(a)) == world_digest(load_world(b)) == world_digest(dev_world)
    edited = dev_world.copy(deep=True)
    edited["probs"].values[0, 0, 0, 1] = 0.31
    assert world_digest(edited) != world_digest(dev_world)


def test_a_world_too_large_for_memory_is_refused_before_loading(dev_world, tmp_path, monkeypatch):
    import tdmodels.world as tw

    p = save_world(dev_world, tmp_path / "dev.nc")
    monkeypatch.setattr(tw, "memory_available", lambda: 100_000)
    with pytest.raises(WorldFormatError, match=r"too large for this machine.*probs \[student=300, question=144"):
        load_world(p)
    with pytest.raises(WorldFormatError, match="x 3 process"):
        load_world(p, copies=3)


def _attr(ds, key, value):
    ds.attrs[key] = value
    return ds


def test_a_write_that_dies_midway_leaves_the_old_world_file(dev_world, tmp_path, monkeypatch):
    """write_world_file wrote a temporary file and renamed it but left the temporary behind on failure
    and did not fsync; it now goes through tdmodels.atomic_file like the run store (the netCDF bytes made
    in memory, then written: a kill while they are written)."""
    from pathlib import Path

    from tdmodels.world import world_digest

    path = save_world(dev_world, tmp_path / "w.nc")
    before = path.read_bytes()

    def dies(self, data):
        with open(self, "wb") as fh:
            fh.write(data[: len(data) // 2])
        raise KeyboardInterrupt

    monkeypatch.setattr(Path, "write_bytes", dies)
    with pytest.raises(KeyboardInterrupt):
        save_world(dev_world, path)
    monkeypatch.undo()
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["w.nc"]
    assert world_digest(load_world(path)) == world_digest(dev_world)


def _small_world():
    from tdmodels.from_arrays import world_from_arrays

    return world_from_arrays(np.random.default_rng(0).uniform(0.2, 0.8, (4, 5, 3)), name="mine", session_length=5)


@pytest.mark.parametrize("value", [[7], ["a"], np.array([2.5]), (3,), [7, 8], "text", 1.5, [1, 2.5], [], ["a", "b"]])
def test_a_world_hashes_the_same_in_memory_and_after_a_file_round_trip(tmp_path, value):
    """netCDF gives a list of one back as that one value: the digest had changed across save and load."""
    from tdmodels.world import load_world, save_world, world_digest

    w = _small_world()
    w.attrs["note"] = value
    save_world(w, tmp_path / "w.nc")
    assert world_digest(load_world(tmp_path / "w.nc")) == world_digest(w)


def test_the_sign_of_a_nan_does_not_change_a_worlds_digest():
    from tdmodels.world import world_digest

    w = _small_world()
    a, b = w.copy(deep=True), w.copy(deep=True)
    a["probs"].values[0, 0, 0, 0] = np.nan
    b["probs"].values[0, 0, 0, 0] = -np.nan if np.signbit(-np.nan) else np.copysign(np.nan, -1.0)
    assert np.signbit(b["probs"].values[0, 0, 0, 0]) and not np.signbit(a["probs"].values[0, 0, 0, 0])
    assert world_digest(a) == world_digest(b)


@pytest.mark.parametrize("value, words", [(np.bool_(True), "bool"), (True, "bool"), ({"a": 1}, "dict"),
                                          (None, "NoneType"), ("a\x00b", "NUL"), ([1, None], "list"),
                                          ([[1, 2]], "nested"), (np.zeros((1, 2)), "nested"), ([1, "a"], "mixing"),
                                          (2**70, "64-bit"), (["a", "b\x00"], "NUL")])
def test_an_attribute_a_file_cannot_hold_is_named_before_saving(tmp_path, value, words):
    from tdmodels.world import WorldFormatError, save_world, validate_world

    w = _small_world()
    w.attrs["note"] = value
    with pytest.raises(WorldFormatError, match=f"attrs.note.*{words}"):
        validate_world(w)
    with pytest.raises(WorldFormatError, match="attrs.note"):
        save_world(w, tmp_path / "w.nc")
    assert not list(tmp_path.iterdir())


def test_a_nul_in_a_text_variable_is_named():
    from tdmodels.world import WorldFormatError, validate_world

    w = _small_world()
    text = w["question_text"].values.astype(object)
    text[1] = "a\x00b"
    w["question_text"] = ("question", text)
    with pytest.raises(WorldFormatError, match="question_text.*NUL"):
        validate_world(w)


def test_open_world_takes_a_path_object_as_its_docstring_says(tmp_path):
    from pathlib import Path

    from tdmodels.world import world_digest

    w = _small_world()
    save_world(w, tmp_path / "mine.nc")
    assert world_digest(open_world(Path(tmp_path / "mine.nc"))) == world_digest(open_world(str(tmp_path / "mine.nc")))


def test_nan_ids_are_refused():
    """NaN never equals itself, so a set of NaN question ids had passed as unique."""
    w = _small_world()
    w = w.assign_coords(question=np.full(w.sizes["question"], np.nan))
    with pytest.raises(WorldFormatError, match="question.*finite"):
        validate_world(w)


def test_the_memory_guard_respects_the_process_address_space_limit(tmp_path):
    """Under `ulimit -v` (or a container's limit) a world that fits the machine but not the process was
    built anyway and died with an allocation traceback; it is refused with one line, exit 2."""
    import resource
    import subprocess
    import sys

    rng = np.random.default_rng(0)
    np.savez_compressed(tmp_path / "mid.npz", utilities=rng.uniform(size=(300, 6, 400)))   # builds ~8.6 GiB
    limit = 2_500_000_000

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    code = "import tdmodels.memory as m; print(m.memory_available())"
    out = subprocess.run([sys.executable, "-c", code], preexec_fn=cap, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and 0 < int(out.stdout) < limit, out.stderr[-1000:]
    out = subprocess.run([sys.executable, "-m", "tutorduel.cli", "worlds", "from-arrays", str(tmp_path / "mid.npz"),
                          "--name", "mid", "--worlds", str(tmp_path / "worlds")], preexec_fn=cap, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 2, out.stderr[-2000:]
    assert "GiB available" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "worlds" / "mid.nc").exists()


@pytest.mark.parametrize("where", ["student_profile", "question_text", "student_traits", "persona", "description",
                                   "generator"])
@pytest.mark.parametrize("char", ["\n", "\r", "\t", "\x1b", "\u2028", "\u202e"])
def test_a_line_break_or_control_character_in_a_worlds_text_is_named(where, char):
    """A profile name holding a newline and a table row made `stats --by-profile` print a row for a policy that
    never ran; a question text with newlines made `play --terminal` print a fake end of session."""
    w = _small_world()
    forged = f"x{char}| forged | 99.9 |"
    if where in ("description", "generator"):
        w.attrs[where] = forged
    elif where == "persona":
        names = w["persona"].values.astype(object)
        names[1] = forged
        w = w.assign_coords(persona=names, first=names, second=names)
    else:
        values = w[where].values.astype(object)
        values[-1] = forged
        w[where] = (w[where].dims, values)
    field = f"attrs.{where}" if where in ("description", "generator") else where
    with pytest.raises(WorldFormatError, match=f"field '{field}': holds the control character"):
        validate_world(w)


def test_the_cues_list_keeps_its_line_breaks_and_nothing_else():
    w = _small_world()
    w.attrs["cues"] = "why\nhow"
    validate_world(w)
    w.attrs["cues"] = "why\nhow\x1b[2J"
    with pytest.raises(WorldFormatError, match="attrs.cues"):
        validate_world(w)
