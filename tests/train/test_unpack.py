"""A bundle is unpacked without trusting it: sizes are checked before anything is
written (a decompression bomb is refused at its first oversized member), unsafe
members and broken archives are one clear error naming the bundle."""

from __future__ import annotations

import io
import json
import tarfile

import pytest
from typer.testing import CliRunner

from skillopt.cli.main import app
from skillopt.errors import InputError
from skillopt.training import unpack as unpacking
from skillopt.training.unpack import unpack

MIB = 1 << 20


def add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def archive(path, members: list[tuple[str, bytes]]):
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members:
            add(tar, name, data)
    return path


def manifest(**extra) -> bytes:
    return json.dumps({"version": 1, "run_id": "r", "suite": "s.yaml", **extra}).encode()


def test_a_bomb_is_refused_before_its_member_is_written(tmp_path):
    """4 MiB of zeros compress to a few KiB: with a bound of 1 MiB the member is
    refused from its header, and nothing of it lands on disk."""
    bomb = archive(tmp_path / "bomb.tar.gz", [("bundle/store.sqlite", b"\0" * (4 * MIB))])
    assert bomb.stat().st_size < 64 * 1024
    dest = tmp_path / "out"
    with pytest.raises(InputError) as info:
        unpack(bomb, dest, limit=MIB)
    assert "would unpack to more than 1.0 MiB" in str(info.value)
    assert "'bundle/store.sqlite' alone is 4.0 MiB" in str(info.value)
    assert str(bomb) in str(info.value)
    assert not (dest / "bundle" / "store.sqlite").exists()


def test_many_small_members_count_toward_the_same_bound(tmp_path):
    members = [(f"bundle/part-{i}", b"x" * (300 * 1024)) for i in range(5)]
    with pytest.raises(InputError, match="would unpack to more than 1.0 MiB"):
        unpack(archive(tmp_path / "parts.tar.gz", members), tmp_path / "out", limit=MIB)
    assert len(list((tmp_path / "out" / "bundle").iterdir())) == 3  # 900 KiB written


def test_a_member_past_what_the_manifest_declares_is_refused(tmp_path):
    members = [("bundle/bundle.json", manifest(bytes=200)), ("bundle/store.sqlite", b"y" * 500)]
    with pytest.raises(InputError, match="would unpack to more than 200 bytes"):
        unpack(archive(tmp_path / "b.tar.gz", members), tmp_path / "out")
    assert not (tmp_path / "out" / "bundle" / "store.sqlite").exists()


def test_unsafe_members_are_refused(tmp_path):
    escape = archive(tmp_path / "escape.tar.gz", [("../evil.txt", b"boo")])
    with pytest.raises(InputError, match="unsafe member"):
        unpack(escape, tmp_path / "out")
    assert not (tmp_path / "evil.txt").exists()
    link = tmp_path / "link.tar.gz"
    with tarfile.open(link, "w:gz") as tar:
        info = tarfile.TarInfo("bundle/passwd")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(info)
    with pytest.raises(InputError, match="unsafe member"):
        unpack(link, tmp_path / "out2")


def test_a_truncated_or_foreign_archive_is_one_clear_error(tmp_path):
    good = archive(
        tmp_path / "good.tar.gz",
        [("bundle/bundle.json", manifest()), ("bundle/store.sqlite", bytes(range(256)) * 4096)],
    )
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(InputError, match="cannot be read"):
        unpack(cut, tmp_path / "out")
    foreign = archive(tmp_path / "foreign.tar.gz", [("something/else.txt", b"hi")])
    with pytest.raises(InputError, match="not a skillopt bundle"):
        unpack(foreign, tmp_path / "out2")
    assert unpack(good, tmp_path / "out3") == tmp_path / "out3" / "bundle"


def test_replaying_a_bomb_exits_2_naming_the_bundle(tmp_path, monkeypatch):
    monkeypatch.setattr(unpacking, "MAX_BYTES", MIB)
    bomb = archive(
        tmp_path / "bomb.tar.gz",
        [("bundle/bundle.json", manifest()), ("bundle/store.sqlite", b"\0" * (2 * MIB))],
    )
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["train", "--replay", str(bomb)])
    assert res.exit_code == 2, res.output
    assert "would unpack to more than 1.0 MiB" in res.stderr
    assert "internal error" not in res.output + res.stderr


def test_a_new_bundle_declares_what_it_unpacks_to(tmp_path):
    """`skillopt bundle` writes `bytes`; unpacking it checks the total against it."""
    from skillopt.training.unpack import tree_bytes

    (tmp_path / "tree" / "a").mkdir(parents=True)
    (tmp_path / "tree" / "a" / "f").write_bytes(b"z" * 1000)
    (tmp_path / "tree" / "g").write_bytes(b"z" * 24)
    assert tree_bytes(tmp_path / "tree") == 1024
