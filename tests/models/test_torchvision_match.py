"""torchvision beside torch: the advice names the release built for the installed torch with
--no-deps (so pip keeps that torch) or leaving it out, and a torchvision built for another torch
is one line at load naming both versions."""
import pytest

from timefoil.models import torchvision_match
from timefoil.models.torchvision_match import advice, matching, mismatch, say_mismatch


def versions(**installed):
    return lambda name: installed.get(name)


@pytest.mark.parametrize("torch, vision", [("2.13.0", "0.28.0"), ("2.13.0+cpu", "0.28.0"), ("2.5.1", "0.20.1"),
                                           ("2.9", "0.24.0")])
def test_the_release_built_for_each_torch(torch, vision):
    assert matching(torch) == vision  # torchvision's release table: 0.20.1 for 2.5.1, 0.24 for 2.9


def test_the_advice_keeps_the_installed_torch_or_says_to_leave_torchvision_out():
    assert advice(versions(torch="2.13.0+cpu")) == (
        "pip install --no-deps torchvision==0.28.0 (the release built for the installed torch 2.13.0+cpu; --no-deps "
        "keeps that torch), or leave torchvision out")
    assert "--no-deps" in advice(versions()) and "leave torchvision out" in advice(versions())


def test_a_torchvision_for_another_torch_is_one_line_naming_both(capsys, monkeypatch):
    wrong = versions(torch="2.13.0", torchvision="0.29.1")
    assert mismatch(wrong) == (
        "torchvision 0.29.1 is installed beside torch 2.13.0, which needs torchvision 0.28: a model that imports it "
        "will fail; pip install --no-deps torchvision==0.28.0, or pip uninstall torchvision (timefoil builds the "
        "families' inputs without it)")
    assert mismatch(versions(torch="2.13.0", torchvision="0.28.1")) is None  # a patch apart: built for it
    assert mismatch(versions(torch="2.13.0")) is None  # none installed: nothing to say
    monkeypatch.setattr(torchvision_match, "_said", [])
    say_mismatch(wrong)
    say_mismatch(wrong)  # a second model loading in the same process: said once
    said = capsys.readouterr().err.splitlines()
    assert said == ["timefoil: " + mismatch(wrong)]
