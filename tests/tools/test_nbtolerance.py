"""The notebook check's comparison (tests/nbtolerance.py): text equal, numbers at their printed precision."""

from nbtolerance import first_difference


def test_numbers_agree_to_one_unit_in_their_last_digit():
    assert first_difference("log Z = -18.81, 47 its", "log Z = -18.82, 47 its") is None
    assert "stored -18.81, computed now -18.84" in first_difference("log Z = -18.81", "log Z = -18.84")
    assert "exactly" in first_difference("EM-EP: 47 iterations", "EM-EP: 84 iterations")
    assert first_difference("error below 1e-08", "error below 1e-08") is None
    assert first_difference("error 4e-08", "error 1e-08") is not None


def test_text_must_match_but_white_space_runs_count_once():
    assert first_difference("  9.99 | 0.50\n", " 10.00 | 0.50\n") is None
    assert first_difference("converged", "not converged") == "the text around the numbers differs"
    # digits glued to a word on their left are text: K15 is not a number
    assert first_difference("K15 at 0.3", "K16 at 0.3") == "the text around the numbers differs"
    assert first_difference("-0.00", "0.00") is None
