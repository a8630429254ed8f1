"""promptfoo configs read into suites: each assert type's scorer, defaultTest, vars,
a CSV tests file, a Nunjucks prompt, unmapped asserts; then `skillopt eval` offline,
whose per-task pass/fail comes out right only if each mapping is right."""

from __future__ import annotations

import textwrap

import pytest
import yaml

from skillopt.errors import InputError
from skillopt.suite.sources import FieldMap, detect, read_source
from suite.import_eval import YES, evaluate

# one test per assert type: (key, assert, the answer the target gives, passes?)
CASES = [
    ("equals", {"type": "equals", "value": "Paris"}, "Paris", True),
    ("equals-case", {"type": "equals", "value": "Paris"}, "paris", False),
    ("contains", {"type": "contains", "value": "Rome"}, "It is Rome.", True),
    ("icontains", {"type": "icontains", "value": "madrid"}, "MADRID!", True),
    ("contains-all", {"type": "contains-all", "value": ["red", "blue"]}, "red only", False),
    ("icontains-all", {"type": "icontains-all", "value": ["RED", "BLUE"]}, "red, blue", True),
    ("contains-any", {"type": "contains-any", "value": ["cat", "dog"]}, "a dog", True),
    ("icontains-any", {"type": "icontains-any", "value": ["CAT", "DOG"]}, "a bird", False),
    ("starts-with", {"type": "starts-with", "value": "Yes"}, "Yes, sure", True),
    ("starts-late", {"type": "starts-with", "value": "Yes"}, "Well, Yes", False),
    ("regex", {"type": "regex", "value": r"^\d{3}$"}, "123", True),
    ("is-json", {"type": "is-json"}, '{"a": 1}', True),
    ("is-json-object", {"type": "is-json", "value": {"type": "object"}}, "[1, 2]", False),
    ("contains-json", {"type": "contains-json"}, 'here: {"a": 1} ok', True),
    (
        "llm-rubric",
        {"type": "llm-rubric", "value": "Is polite", "provider": "openai:gpt-4o"},
        YES,
        True,
    ),
    ("llm-rubric-no", {"type": "llm-rubric", "value": "Is polite"}, "rude", False),
    ("not-contains", {"type": "not-contains", "value": "sorry"}, "sorry, no", False),
    ("not-icontains", {"type": "not-icontains", "value": "SORRY"}, "fine", True),
    ("not-equals", {"type": "not-equals", "value": "no"}, "no", False),
    ("not-regex", {"type": "not-regex", "value": r"\d"}, "no digits", True),
    ("not-starts-with", {"type": "not-starts-with", "value": "I"}, "I think", False),
]


def scorer_of(imported, item):
    """The item's scorer, its own or the suite's."""
    return item.get("scorer", imported.scorer)


def config(tmp_path, tests, **extra):
    body = {
        "description": "Every assert",
        "prompts": ["Q: {{ question }} in {{ lang }} {literal braces} [[{{ key }}]]"],
        "defaultTest": {"vars": {"lang": "English"}},
        "tests": tests,
        **extra,
    }
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return path


def test_each_assert_type_maps_to_the_scorer_that_scores_it_alike(tmp_path):
    tests = [
        {"description": key, "vars": {"question": f"q {key}", "key": key}, "assert": [a]}
        for key, a, _, _ in CASES
    ]
    imported = read_source(str(config(tmp_path, tests).parent))
    assert imported.kind == "promptfoo" and len(imported.items) == len(CASES)
    assert imported.skipped == ()
    assert imported.judge == "openai/gpt-4o"  # the rubric's provider, as a model name
    assert any("openai/gpt-4o" in n for n in imported.notes)
    # the Nunjucks prompt is a template over the item's vars; literal braces stay literal
    assert imported.prompt == "Q: {question} in {lang} {{literal braces}} [[{key}]]"
    first = imported.items[0]
    assert first["input"] == {"question": "q equals", "key": "equals", "lang": "English"}
    assert first["metadata"] == {"description": "equals"}
    used = imported.scorers_used()
    assert used["regex"] == 10 and used["judge"] == 2 and used["json"] == 3
    assert used["contains"] == 4 and used["exact"] == 2
    passed = evaluate(imported, tmp_path, {key: ans for key, _, ans, _ in CASES})
    assert passed == {f"t{i}": ok for i, (_, _, _, ok) in enumerate(CASES, 1)}


def test_an_unmapped_assert_skips_its_test_unless_kept(tmp_path):
    tests = [
        {
            "vars": {"question": "q", "key": "k"},
            "assert": [
                {"type": "contains", "value": "ok"},
                {"type": "javascript", "value": "output.length < 10"},
            ],
        },
        {"vars": {"question": "q2", "key": "k2"}, "assert": [{"type": "cost", "threshold": 1}]},
        {"vars": {"question": "q3", "key": "k3"}},
    ]
    path = config(tmp_path, tests)
    skipped = read_source(str(path))
    assert skipped.items == ()
    reasons = {s.where: s.reason for s in skipped.skipped}
    assert reasons == {
        "tests[0]": "assert javascript has no skillopt scorer",
        "tests[1]": "assert cost has no skillopt scorer; no assert maps to a skillopt scorer",
        "tests[2]": "no asserts: nothing to score it by",
    }
    kept = read_source(str(path), fields=FieldMap(keep_unscored=True))
    assert [i["id"] for i in kept.items] == ["t1"]  # the one with a mapped assert
    assert scorer_of(kept, kept.items[0]) == {"type": "contains"}
    assert "tests[0]: assert javascript has no skillopt scorer; kept" in " ".join(kept.notes)
    assert [s.where for s in kept.skipped] == ["tests[1]", "tests[2]"]
    assert evaluate(kept, tmp_path, {"k": "ok, long enough to fail javascript"}) == {"t1": True}


def test_default_asserts_join_each_test_and_several_asserts_make_an_all_scorer(tmp_path):
    tests = [
        {
            "vars": {"question": "a", "key": "both"},
            "assert": [{"type": "icontains", "value": "ok"}],
        },
        {
            "vars": {"question": "b", "key": "banned"},
            "assert": [{"type": "icontains", "value": "ok"}],
        },
        {
            "vars": {"question": "c", "key": "weighted", "lang": "French"},
            "threshold": 0.7,
            "assert": [
                {"type": "contains", "value": "bien", "weight": 3},
                {"type": "contains", "value": "absent"},
            ],
        },
        # a judge inside an `all` scorer still gets its judge model
        {
            "vars": {"question": "d", "key": "judged"},
            "assert": [{"type": "llm-rubric", "value": "polite"}],
        },
    ]
    path = config(
        tmp_path,
        tests,
        defaultTest={
            "vars": {"lang": "English"},
            "assert": [{"type": "not-icontains", "value": "error"}],
        },
    )
    imported = read_source(str(path))
    weighted = imported.items[2]
    assert weighted["input"]["lang"] == "French"  # a test's var wins over defaultTest's
    spec = scorer_of(imported, weighted)
    assert spec["type"] == "all" and spec["threshold"] == 0.7
    assert spec["of"][1] == {"type": "contains", "expected": "bien", "weight": 3.0}
    answers = {"both": "OK then", "banned": "ok but ERROR", "weighted": "très bien", "judged": YES}
    # weights 1 (no error), 3 (bien), 1 (absent missing): 4/5 = 0.8 >= 0.7 passes
    passed = evaluate(imported, tmp_path, answers)
    assert passed == {"t1": True, "t2": False, "t3": True, "t4": True}


def test_a_csv_tests_file_with_expected_columns(tmp_path):
    (tmp_path / "cases.csv").write_text(
        textwrap.dedent(
            """\
            question,key,__expected1,__expected2,__description
            "Capital of Italy, ""please""?",italy,"contains-any: Rome,Roma",starts-with: R,Italy
            "2+2?",sum,4,,math
            "Say hi",hi,grade: Says hi [[politely]],,greeting
            "Code",code,"javascript: output.length > 1",,code
            """
        ),
        encoding="utf-8",
    )
    path = config(tmp_path, ["file://cases.csv"])
    imported = read_source(str(path))
    by_id = {i["id"]: i for i in imported.items}
    assert by_id["t1"]["input"]["question"] == 'Capital of Italy, "please"?'
    assert by_id["t1"]["metadata"] == {"description": "Italy"}
    assert scorer_of(imported, by_id["t1"])["of"] == [
        {"type": "regex", "pattern": "Rome|Roma"},
        {"type": "regex", "pattern": r"\AR"},
    ]
    assert (scorer_of(imported, by_id["t2"]), by_id["t2"]["expected"]) == ("exact", "4")
    assert scorer_of(imported, by_id["t3"]) == {"type": "judge", "rubric": "Says hi [[politely]]"}
    assert [(s.where, s.reason) for s in imported.skipped] == [
        (
            "cases.csv row 4",
            "assert javascript has no skillopt scorer; no assert maps to a skillopt scorer",
        )
    ]
    answers = {"italy": "Roma!", "sum": "4", "hi": "hello " + YES}
    assert evaluate(imported, tmp_path, answers) == {"t1": True, "t2": True, "t3": True}


def test_prompt_forms_list_vars_and_file_vars(tmp_path):
    (tmp_path / "prompt.txt").write_text("Translate [[{{word}}]]\n---\nSecond {{word}}\n")
    (tmp_path / "long.txt").write_text("a long text")
    path = config(
        tmp_path,
        [
            {
                "vars": {"word": ["one", "two"]},
                "assert": [{"type": "equals", "value": "{{word}}!"}],
            },
            {"vars": {"word": "file://long.txt"}, "assert": [{"type": "contains", "value": "x"}]},
        ],
        prompts=[{"id": "file://prompt.txt", "label": "translate"}],
    )
    imported = read_source(str(path))
    assert imported.prompt == "Translate [[{input}]]"  # one var: the item's input is its value
    assert [(i["id"], i["input"], i.get("expected")) for i in imported.items] == [
        ("t1", "one", "one!"),
        ("t1-2", "two", "two!"),
        ("t2", "a long text", "x"),
    ]
    assert (
        "the config has 2 prompts; imported with the first (prompt.txt#1 left out)"
        in imported.notes
    )
    assert evaluate(imported, tmp_path, {"one": "one!", "two": "two"}) == {
        "t1": True,
        "t1-2": False,
        "t2": False,
    }


@pytest.mark.parametrize(
    ("prompt", "tests", "field", "words"),
    [
        (
            "{{ q | upper }}",
            [{"vars": {"q": "x"}, "assert": [{"type": "equals", "value": "X"}]}],
            "prompt",
            "Nunjucks",
        ),
        ("{% if q %}{{q}}{% endif %}", [], "prompt", "Nunjucks"),
        ("{{q}}", [{"vars": {"q": "file://../secret.txt"}, "assert": []}], "vars.q", "outside"),
        ("{{q}}", [{"vars": {"q": "file://gen.py"}, "assert": []}], "vars.q", "runs nothing"),
        ("{{q}}", ["not a test"], None, "a test must be a mapping"),
    ],
)
def test_a_bad_config_is_one_error_naming_the_file_the_test_and_the_field(
    tmp_path, prompt, tests, field, words
):
    (tmp_path / "secret.txt").write_text("s3cret")
    project = tmp_path / "project"
    project.mkdir()
    path = config(project, tests or [{"vars": {"q": "x"}}], prompts=[prompt])
    with pytest.raises(InputError) as err:
        read_source(str(path))
    message = str(err.value)
    assert str(path) in message and words in message and "s3cret" not in message
    if field:
        assert f"field {field!r}" in message
    assert "tests[0]" in message or "prompts[0]" in message


def test_a_code_prompt_is_refused_and_a_bare_tests_file_is_detected(tmp_path):
    path = config(tmp_path, [{"vars": {"q": "x"}}], prompts=["file://make_prompt.py"])
    (tmp_path / "make_prompt.py").write_text("raise SystemExit('ran')")
    with pytest.raises(InputError, match="skillopt runs nothing it imports"):
        read_source(str(path))
    bare = tmp_path / "tests.yaml"
    bare.write_text(
        yaml.safe_dump(
            [{"vars": {"city": "Oslo"}, "assert": [{"type": "equals", "value": "Norway"}]}]
        )
    )
    assert detect(str(bare)) == "promptfoo"
    imported = read_source(str(bare))
    assert imported.prompt == "{input}" and imported.items[0]["input"] == "Oslo"


def test_a_regex_python_cannot_read_skips_the_test_with_the_reason(tmp_path):
    path = config(
        tmp_path,
        [{"vars": {"q": "x"}, "assert": [{"type": "regex", "value": "(?<name>x)"}]}],
        prompts=["{{q}}"],
    )
    imported = read_source(str(path))
    assert imported.items == ()
    assert "is not a Python regular expression" in imported.skipped[0].reason


def test_thresholds_map_onto_a_rubric_and_are_noted_elsewhere(tmp_path):
    asserts = [
        {"type": "llm-rubric", "value": "kind", "threshold": 0.8},
        {"type": "contains", "value": "x", "threshold": 0.5},
    ]
    path = config(tmp_path, [{"vars": {"q": "x"}, "assert": asserts}], prompts=["{{q}}"])
    imported = read_source(str(path))
    (item,) = imported.items
    assert scorer_of(imported, item)["of"][0] == {
        "type": "judge",
        "rubric": "kind",
        "threshold": 0.8,
    }
    assert "the threshold of these asserts is not used: 1 contains" in imported.notes


def test_a_json_config_and_a_csv_with_expected_columns_are_detected(tmp_path):
    path = tmp_path / "promptfooconfig.json"
    path.write_text(
        '{"prompts": ["{{q}}"], "tests": [{"vars": {"q": "x"}, "assert": [{"type": "equals", "value": "y"}]}]}'
    )
    assert detect(str(path)) == "promptfoo"
    assert read_source(str(path)).items[0]["expected"] == "y"
    tests = tmp_path / "tests.csv"
    tests.write_text("q,__expected\nx,y\n")
    plain = tmp_path / "plain.csv"
    plain.write_text("q,expected\nx,y\n")
    assert (detect(str(tests)), detect(str(plain))) == ("promptfoo", "csv")
    assert read_source(str(tests)).items[0] == {"id": "t1", "input": "x", "expected": "y"}


def test_an_absolute_glob_is_refused(tmp_path):
    path = config(tmp_path, ["file:///etc/*.conf"])
    with pytest.raises(InputError, match="must be a path relative to the config"):
        read_source(str(path))


def test_huggingface_tests_are_a_datasets_rows_as_vars(tmp_path, monkeypatch):
    """`tests: huggingface://datasets/acme/capitals?split=train&limit=2`, read by the
    real `datasets` library: offline, an id that names a local dataset folder is read
    from it, as from the hub (each row's fields become the test's vars)."""
    pytest.importorskip("datasets")
    folder = tmp_path / "acme" / "capitals"
    folder.mkdir(parents=True)
    (folder / "train.csv").write_text("country,city\nFrance,Paris\nItaly,Rome\nSpain,Madrid\n")
    (folder / "test.csv").write_text("country,city\nPeru,Lima\n")
    monkeypatch.chdir(tmp_path)
    body = {
        "prompts": ["Capital of {{country}}? [[{{country}}]]"],
        "defaultTest": {"assert": [{"type": "equals", "value": "{{city}}"}]},
        "tests": "huggingface://datasets/acme/capitals?split=train&limit=2",
    }
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    imported = read_source(str(path))
    # the prompt's one var is the input; the assert's var, filled from the row
    assert [(item["input"], item["expected"]) for item in imported.items] == [
        ("France", "Paris"),
        ("Italy", "Rome"),
    ]
    passed = evaluate(imported, tmp_path, {"France": "Paris", "Italy": "Milan"})
    assert sorted(passed.values()) == [False, True]  # Rome was expected, not Milan

    # without a split named, promptfoo reads `test`
    body["tests"] = "huggingface://datasets/acme/capitals"
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    assert [item["expected"] for item in read_source(str(path)).items] == ["Lima"]

    body["tests"] = "huggingface://datasets/acme/nothing-here"
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    with pytest.raises(InputError, match="cannot load Hugging Face dataset 'acme/nothing-here'"):
        read_source(str(path))
