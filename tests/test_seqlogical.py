import pytest
from hypothesis import given
from hypothesis import strategies as st

from crop_hf.labels import Span
from crop_hf.seqlogical import ParseError, Tree, TreeTooDeepError, from_flat, parse, to_flat

CSTOP_EXAMPLE = "[IN:GET_WEATHER Dime el clima [SL:DATE_TIME para next Friday ] ]"
TOP_NESTED = (
    "[IN:GET_DISTANCE how far is [SL:DESTINATION [IN:GET_RESTAURANT_LOCATION the "
    "[SL:FOOD_TYPE vegan ] restaurant ] ] from [SL:SOURCE [IN:GET_LOCATION_HOME my house ] ] ]"
)


def test_parse_cstop_example():
    tree = parse(CSTOP_EXAMPLE)
    assert (tree.kind, tree.name, tree.label) == ("IN", "GET_WEATHER", "IN:GET_WEATHER")
    slot = tree.children[3]
    assert isinstance(slot, Tree) and slot.label == "SL:DATE_TIME"
    assert slot.children == ["para", "next", "Friday"]
    assert tree.depth == 2
    assert str(tree) == CSTOP_EXAMPLE


def test_parse_accepts_glued_closing_brackets_and_odd_spacing():
    # The paper's figure writes "[SL:DATE_TIME para next Friday]]".
    tree = parse("  [IN:GET_WEATHER Dime el clima\t[SL:DATE_TIME para next Friday]]\n")
    assert str(tree) == CSTOP_EXAMPLE


def test_nested_top_tree_round_trips_and_refuses_to_flatten():
    tree = parse(TOP_NESTED)
    assert str(tree) == TOP_NESTED
    assert tree.depth == 4
    assert [t.label for t in tree.subtrees()][:3] == ["IN:GET_DISTANCE", "SL:DESTINATION", "IN:GET_RESTAURANT_LOCATION"]
    with pytest.raises(TreeTooDeepError, match="SL:DESTINATION"):
        to_flat(tree)


def test_flat_conversion_and_back():
    flat = to_flat(CSTOP_EXAMPLE)
    assert flat.tokens == ["Dime", "el", "clima", "para", "next", "Friday"]
    assert flat.intent == "GET_WEATHER"
    assert flat.slots == [Span(3, 6, "DATE_TIME")]
    assert flat.slot_tags == ["O", "O", "O", "B-DATE_TIME", "I-DATE_TIME", "I-DATE_TIME"]
    assert str(flat.to_tree()) == CSTOP_EXAMPLE
    assert str(from_flat(flat.tokens, "IN:GET_WEATHER", slot_tags=flat.slot_tags)) == CSTOP_EXAMPLE


def test_intent_without_slots_and_adjacent_slots():
    assert to_flat("[IN:WAKE_UP Quita sleep mode ]").slot_tags == ["O", "O", "O"]
    flat = to_flat("[IN:GET_WEATHER [SL:LOCATION Miami ] [SL:DATE_TIME este weekend ] ]")
    assert flat.slot_tags == ["B-LOCATION", "B-DATE_TIME", "I-DATE_TIME"]


@pytest.mark.parametrize(
    ("text", "message", "position"),
    [
        ("[IN:GET_WEATHER clima [SL:DATE_TIME hoy ]", "'[IN:GET_WEATHER' is never closed", 0),
        ("[IN:GET_WEATHER clima ] ]", "']' closes nothing", 24),
        ("[GET_WEATHER clima ]", "label 'GET_WEATHER' must start with 'IN:' or 'SL:'", 0),
        ("[IN: clima ]", "label 'IN:' has no name", 0),
        ("[ clima ]", "empty label after '['", 0),
        ("[SL:DATE_TIME hoy ]", "slot 'SL:DATE_TIME' must be directly inside an intent", 0),
        ("[IN:A [IN:B x ] ]", "intent 'IN:B' may only be the root or inside a slot", 6),
        ("[IN:A [SL:B [SL:C x ] ] ]", "slot 'SL:C' must be directly inside an intent", 12),
        ("hola [IN:A x ]", "word 'hola' outside the root node", 0),
        ("[IN:A x ] [IN:B y ]", "a second root node; a parse has exactly one", 10),
        ("", "no '[IN:' node found", 0),
    ],
)
def test_invalid_parses_raise_with_position(text, message, position):
    with pytest.raises(ParseError) as info:
        parse(text)
    assert str(info.value).startswith(f"{message} at character {position}:\n")
    assert isinstance(info.value, ValueError)
    assert info.value.position == position
    assert "^" in str(info.value)  # the caret under the offending character


def test_from_flat_rejects_unwritable_input():
    with pytest.raises(ValueError, match="exactly one"):
        from_flat(["a"], "X")
    with pytest.raises(ValueError, match="cannot be written"):
        from_flat(["a]"], "X", slots=[])
    with pytest.raises(ValueError, match="overlap"):
        from_flat(["a", "b"], "X", slots=[(0, 2, "A"), (1, 2, "B")])
    with pytest.raises(ValueError, match="2 slot tags for 1 tokens"):
        from_flat(["a"], "X", slot_tags=["O", "O"])
    with pytest.raises(ValueError, match="invalid SL name"):
        from_flat(["a"], "X", slots=[(0, 1, "SL:")])


def test_empty_slot_parses_but_does_not_flatten():
    tree = parse("[IN:A x [SL:B ] ]")
    assert str(tree) == "[IN:A x [SL:B ] ]"
    with pytest.raises(ValueError, match="empty"):
        to_flat(tree)


words = st.text(st.characters(blacklist_categories=("Z", "C"), blacklist_characters="[]"), min_size=1, max_size=6)
names = st.from_regex(r"[A-Z][A-Z_]{0,8}", fullmatch=True)


@st.composite
def flat_parses(draw):
    tokens = draw(st.lists(words, max_size=12))
    spans, position = [], 0
    while position < len(tokens):
        position += draw(st.integers(0, 3))
        if position >= len(tokens):
            break
        end = draw(st.integers(position + 1, min(len(tokens), position + 3)))
        spans.append(Span(position, end, draw(names)))
        position = end
    return tokens, draw(names), spans


@given(flat_parses())
def test_flat_round_trip_through_text(data):
    tokens, intent, spans = data
    text = str(from_flat(tokens, intent, spans))
    flat = to_flat(parse(text))
    assert (flat.tokens, flat.intent, flat.slots) == (tokens, intent, spans)
    assert str(parse(" ".join(text.split()).replace(" ]", "]"))) == text  # whitespace does not matter


def test_parse_error_shows_thirty_characters_around_the_fault_with_a_caret():
    text = "[IN:A " + "x " * 60 + "] ]"  # text on both sides of the excerpt
    error = ParseError("unbalanced", text, 64)
    assert (error.text, error.position) == (text, 64)
    assert str(error) == f"unbalanced at character 64:\n  {text[34:94]}\n  {' ' * 30}^"
    near_start = ParseError("bad label", "[IN: x ]", 1)
    assert str(near_start) == "bad label at character 1:\n  [IN: x ]\n   ^"


def test_flatten_top_level_reads_a_string():
    from crop_hf.seqlogical import flatten_top_level

    text = "[IN:A x [SL:B y ] ]"
    assert flatten_top_level(text) == flatten_top_level(parse(text))
    assert flatten_top_level(text)[0].slot_tags == ["O", "B-B"]


def test_labels_split_at_their_first_colon_and_errors_say_what_was_expected():
    assert parse("[IN:A:B x [SL:C:D y ] ]").label == "IN:A:B"  # a colon inside a name is part of it
    with pytest.raises(ParseError, match=r"^label 'XX:A' must start with 'IN:' or 'SL:'"):
        parse("[XX:A x ]")
    with pytest.raises(ValueError, match=r"^the root of a parse must be an intent, got 'SL:A'$"):
        to_flat(Tree("SL", "A", ["x"]))
    with pytest.raises(ValueError, match=r"^give exactly one of `slots` and `slot_tags`$"):
        from_flat(["x"], "IN:A")


def test_frames_stack_the_intents_of_nested_trees_and_say_what_they_cannot_hold():
    from crop_hf.seqlogical import IntentFrame, UnrepresentableParse, to_frame

    text = "[IN:A x [SL:B [IN:C y [SL:D [IN:E z w ] ] ] ] [SL:F v ] ]"
    tokens, frame = to_frame(text)
    assert tokens == ["x", "y", "z", "w", "v"]
    assert frame == IntentFrame("A", ["O", "B-B", "I-B", "I-B", "B-F"], {
        1: IntentFrame("C", ["O", "B-D", "I-D"], {1: IntentFrame("E", ["O", "O"])})})
    assert frame.depth == 3 and str(frame.to_tree(tokens)) == text
    assert to_frame(parse(text), max_intent_depth=3)[1] == frame
    for tree, depth, reason in [("[IN:A x [SL:B [IN:C y ] z ] ]", None, "mixed_slot"),
                                ("[IN:A x [SL:B [IN:C y ] [IN:D z ] ] ]", None, "mixed_slot"),
                                ("[IN:A x [SL:B ] ]", None, "empty_slot"),
                                ("[IN:A x [SL:B [IN:C ] ] ]", None, "empty_slot"),
                                (text, 2, "too_deep")]:
        with pytest.raises(UnrepresentableParse) as error:
            to_frame(tree, max_intent_depth=depth)
        assert error.value.reason == reason, tree
    with pytest.raises(UnrepresentableParse, match="root"):
        to_frame(Tree("SL", "B", ["x"]))
    with pytest.raises(ValueError, match="2 slot tags for 1 tokens"):
        IntentFrame("E", ["O", "O"]).to_tree(["z"])
    with pytest.raises(ValueError, match="no slot starts"):
        IntentFrame("A", ["O", "B-B"], {0: IntentFrame("C", ["O"])}).to_tree(["x", "y"])
