"""aegis_checks -- the whole-number checks of aegis's Python modules.

aegis_feed, aegis_tensorsocket, aegis_describe, aegis_pipeline and
aegis_downsample each checked their whole-number arguments with a copy of
their own (a bool taken as 1 in one, numpy's integers refused in another);
they all check with these, so that an argument is taken, or refused with
the same words, wherever it is given:

    whole(value)                   value as an int, or None
    check_whole(name, value, lo, hi)
        "NAME: VALUE is not a whole number (type T); it must be from LO
        to HI", or "NAME: VALUE is out of range; it must be ..."
    check_whole_array(name, values, dtype, lo, hi)
        the same of each element of a one-dimensional array, naming the
        element's position

A whole number is an int or any integer type that says so (numpy's
integers, a 0-d integer array or tensor): not a bool (True would pass as
1), a float (2.5 was cut to 2, or made a size a float that torch refused
later) or a str. Plain Python: numpy is imported only for arrays."""
import operator

__all__ = ["whole", "span", "check_whole", "check_whole_array"]


def whole(value):
    """value as an int where it is a whole number (numpy's integers too;
    not a bool, numpy's or torch's either), else None."""
    if isinstance(value, bool) or \
            str(getattr(value, "dtype", "")) in ("bool", "torch.bool"):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def span(lo=None, hi=None):
    """What a whole number between lo and hi (None: no bound) must be, in
    words: "from 1 to 100", "at least 0", "at most 9"."""
    if lo is not None and hi is not None:
        return "from %d to %d" % (lo, hi)
    if lo is not None:
        return "at least %d" % lo
    if hi is not None:
        return "at most %d" % hi
    return "a whole number"


def _must(lo, hi, note):
    words = "" if lo is None and hi is None else "; it must be " + span(lo, hi)
    return words + (" (%s)" % note if note else "")


def not_whole_text(name, value, lo=None, hi=None, note=None):
    """The refusal of value, which is no whole number, for the argument
    `name` (check_whole's words)."""
    return "%s: %r is not a whole number (type %s)%s" % (
        name, value, type(value).__name__, _must(lo, hi, note))


def out_of_range_text(name, value, lo=None, hi=None, note=None):
    """The refusal of the whole number value, out of lo..hi, for the
    argument `name` (check_whole's words)."""
    return "%s: %r is out of range%s" % (name, value, _must(lo, hi, note))


def check_whole(name, value, lo=None, hi=None, *, note=None,
                not_whole=ValueError, out_of_range=ValueError):
    """value as an int; else the exception not_whole (value is no whole
    number) or out_of_range (it is one, outside lo..hi; None is no bound),
    saying the argument's name, the value, its type where that is wrong,
    and what it must be (with note, in parentheses, where given). A
    module's own exception classes may be given for the two cases (a
    TypeError and a ValueError, say)."""
    number = whole(value)
    if number is None:
        raise not_whole(not_whole_text(name, value, lo, hi, note))
    if (lo is not None and number < lo) or (hi is not None and number > hi):
        raise out_of_range(out_of_range_text(name, value, lo, hi, note))
    return number


def check_whole_array(name, values, dtype, lo=None, hi=None, *, at=None,
                      floats=True, note=None, error=ValueError):
    """values (an array-like of one dimension) as a numpy array of the
    integer dtype, each element checked as check_whole checks one: a
    whole number from lo to hi (None: the dtype's own bound). floats:
    whether a float that is a whole number (2.0) is taken. at(i) names the
    element at position i (default NAME[i]). Else `error`, saying which
    element, its value and what it must be, or the shape where values are
    not one dimension: numpy said "could not broadcast", wrapped -1 to
    2**64 - 1, or raised OverflowError naming nothing."""
    import numpy as np
    raw = np.asarray(values)
    if raw.ndim != 1:
        raise error("%s: expected one dimension, got shape %s"
                    % (name, raw.shape))
    limits = np.iinfo(dtype)
    lo = limits.min if lo is None else max(lo, int(limits.min))
    hi = limits.max if hi is None else min(hi, int(limits.max))
    at = at or (lambda i: "%s[%d]" % (name, i))
    kind = raw.dtype.kind
    if kind in "iu" or (kind == "f" and floats):
        if kind == "f":
            with np.errstate(invalid="ignore"):
                bad = ~np.isfinite(raw) | (raw != np.floor(raw))
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise error(not_whole_text(at(i), raw[i].item(), lo, hi,
                                           note))
        # the bounds as Python's ints: numpy compared int64 with 2**64 - 1
        # through float64, and a float with 2**63 - 1 as 2**63
        if raw.size and (int(raw.min()) < lo or int(raw.max()) > hi):
            i = next(i for i, v in enumerate(raw.tolist())
                     if not lo <= v <= hi)
            raise error(out_of_range_text(at(i), raw[i].item(), lo, hi, note))
        return raw.astype(dtype)
    # objects (ints past 64 bits, mixed lists), bools, strings...: each
    for i, value in enumerate(raw.tolist()):
        if floats and isinstance(value, float) and value.is_integer():
            value = int(value)
        number = whole(value)
        if number is None:
            raise error(not_whole_text(at(i), value, lo, hi, note))
        if not lo <= number <= hi:
            raise error(out_of_range_text(at(i), value, lo, hi, note))
    return np.array([int(v) for v in raw.tolist()], dtype=dtype)
