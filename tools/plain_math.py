"""Rewrite inline :math:`...` roles in gpc_ref's docstrings as plain Unicode (issue 22, item 1).

One-off helper for the mechanical part of the conversion: ``python tools/plain_math.py FILE...``
rewrites the files in place and prints each role with its replacement for review. It handles the
TeX the package's docstrings use; anything else is left as a visible ``\\name`` so that review catches it.
"""

import re
import sys
import unicodedata

GREEK = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε", "zeta": "ζ",
    "eta": "η", "theta": "θ", "vartheta": "ϑ", "iota": "ι", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν",
    "xi": "ξ", "pi": "π", "rho": "ρ", "sigma": "σ", "tau": "τ", "upsilon": "υ", "phi": "ϕ", "varphi": "φ",
    "chi": "χ", "psi": "ψ", "omega": "ω", "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Xi": "Ξ",
    "Pi": "Π", "Sigma": "Σ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω",
}  # fmt: skip
SYMBOLS = {
    "sum": "∑", "prod": "∏", "int": "∫", "partial": "∂", "nabla": "∇", "ell": "ℓ", "infty": "∞",
    "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "ne": "≠", "neq": "≠", "approx": "≈", "sim": "~",
    "in": "∈", "propto": "∝", "times": "×", "cdot": "·", "circ": "∘", "pm": "±", "to": "→", "mapsto": "↦",
    "leftarrow": "←", "rightarrow": "→", "forall": "∀", "setminus": "∖", "bigcap": "⋂", "top": "ᵀ",
    "dots": "…", "ldots": "…", "cdots": "⋯", "mid": " | ", "lVert": "‖", "rVert": "‖", "star": "*",
    "quad": "  ", "qquad": "  ", "emptyset": "∅", "cup": "∪", "cap": "∩", "subset": "⊂",
}  # fmt: skip
RELATIONS = {"le", "leq", "ge", "geq", "ne", "neq", "approx", "sim", "in", "propto", "times", "to", "mapsto",
             "leftarrow", "rightarrow"}  # fmt: skip
OPERATORS = {"log", "exp", "det", "tr", "max", "min", "sup", "inf", "diag", "KL"}
DROP = {"left", "right", "bigl", "bigr", "Bigl", "Bigr", "big", "Big", "displaystyle"}
FONTS = {"mathbf", "boldsymbol", "mathrm", "operatorname", "text", "mathit", "bm", "mathsf"}
CALLIGRAPHIC = {
    "A": "𝒜", "B": "ℬ", "C": "𝒞", "D": "𝒟", "E": "ℰ", "F": "ℱ", "G": "𝒢", "H": "ℋ", "I": "ℐ", "L": "ℒ",
    "M": "ℳ", "N": "𝒩", "P": "𝒫", "Q": "𝒬", "R": "ℛ", "S": "𝒮", "Z": "𝒵",
}  # fmt: skip
DOUBLE = {"R": "ℝ", "N": "ℕ", "Z": "ℤ", "E": "𝔼"}
ACCENTS = {"hat": "\u0302", "widehat": "\u0302", "tilde": "\u0303", "widetilde": "\u0303", "bar": "\u0304"}
SUPERSCRIPT = dict(zip("0123456789-+=()T", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺⁼⁽⁾ᵀ"))
SUPERSCRIPT["ᵀ"] = "ᵀ"
FRACTIONS = {("1", "2"): "½", ("1", "3"): "⅓", ("1", "4"): "¼", ("3", "4"): "¾"}


class Parser:
    def __init__(self, text):
        self.text = text
        self.pos = 0

    def peek(self):
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def control_word(self):
        """Read ``\\name`` (or a control symbol) after the backslash; skip spaces after a word."""
        match = re.match(r"[A-Za-z]+", self.text[self.pos :])
        if match:
            self.pos += match.end()
            return match.group()
        symbol = self.peek()
        self.pos += 1
        return symbol

    def argument(self):
        """One TeX argument: a group, a control sequence (with its own argument if a font/accent), or a char."""
        while self.peek() == " ":
            self.pos += 1
        char = self.peek()
        if char == "{":
            return self.group()
        if char == "\\":
            self.pos += 1
            return self.command(self.control_word(), argument=True)
        self.pos += 1
        return char

    def group(self):
        self.pos += 1  # {
        depth, start = 1, self.pos
        while depth:
            char = self.text[self.pos]
            if char == "\\":
                self.pos += 2
                continue
            depth += {"{": 1, "}": -1}.get(char, 0)
            self.pos += 1
        return convert(self.text[start : self.pos - 1])

    def command(self, name, argument=False):
        if name in GREEK:
            return GREEK[name]
        if name in RELATIONS:
            return " " + SYMBOLS[name] + " "
        if name in SYMBOLS:
            return SYMBOLS[name]
        if name in OPERATORS:
            return "\x01" + name + "\x00"  # spaces around it where letters touch (resolved in convert)
        if name in DROP:
            return ""
        if name == "operatorname":
            return "\x01" + self.argument() + "\x00"
        if name in FONTS:
            return self.argument()
        if name == "mathcal":
            inner = self.argument()
            return "".join(CALLIGRAPHIC.get(c, c) for c in inner)
        if name == "mathbb":
            inner = self.argument()
            return "".join(DOUBLE.get(c, c) for c in inner)
        if name in ACCENTS:
            inner = self.argument()
            if len(inner) == 1:
                return inner + ACCENTS[name]
            return f"{name}({inner})"
        if name in {"frac", "tfrac", "dfrac"}:
            top, bottom = self.argument(), self.argument()
            if (top, bottom) in FRACTIONS:
                return FRACTIONS[(top, bottom)]
            return f"({wrap(top)}/{wrap(bottom)})"
        if name == "sqrt":
            inner = self.argument()
            return "√" + wrap(inner)
        if name in {",", ";", ":", " ", "!"}:
            return " " if name != "!" else ""
        if name in {"{", "}", "|", "_", "%", "#", "&"}:
            return {"|": "‖"}.get(name, name)
        if name == "\\":
            return " "
        return "\\" + name  # unknown: left visible for review


def wrap(text):
    """Parenthesise a fraction's or root's operand unless it is one symbol (with sub/superscripts)."""
    bare = text.strip()
    symbol = r"[A-Za-z\u0370-\u03ff][\u0300-\u036f]?(_\w+)?[⁰¹²³⁴⁵⁶⁷⁸⁹⁻ᵀ]*"
    if re.fullmatch(symbol + r"|[A-Za-z_]+|[0-9.]+|\(.*\)|\w\(.*\)", bare):
        return bare
    return f"({bare})"


def script(kind, inner):
    """A subscript or superscript: Unicode superscripts where they exist, else ``_x``/``^x`` or parenthesised."""
    inner = inner.strip()
    if kind == "_":  # reStructuredText reads "x_*" and "x_-i" as links to "x": U+2217 and parentheses
        inner = inner.replace("*", "∗")
        if inner.startswith("-"):
            return f"_({inner})"
    if kind == "^":
        if inner == "*":
            return "*"
        if inner in {"½", "1/2"}:
            return "^½"
        if inner and all(c in SUPERSCRIPT for c in inner) and not (inner.startswith("(") or inner == "T" * 0):
            return "".join(SUPERSCRIPT[c] for c in inner)
    simple = "[A-Za-z0-9*∗…∘'ℐℒ∖+∞\u0370-\u03ff\u0300-\u036f]+"
    if kind == "_" and re.fullmatch("-?" + simple, inner) or re.fullmatch(simple, inner):
        return kind + inner + "\x02"  # a space if a letter follows
    if re.fullmatch(r"\([^()]*\)", inner):
        return kind + inner
    return f"{kind}({inner})"


def convert(tex):
    tex = tex.replace("\\\\", "\\") if "\\\\" in tex and not re.search(r"\\\\\s*$", tex) else tex
    parser = Parser(tex)
    out = []
    while parser.pos < len(tex):
        char = parser.peek()
        if char == "\\":
            parser.pos += 1
            name = parser.control_word()
            if name in GREEK or name in {"partial", "nabla", "setminus", "ell", "circ"}:
                while parser.peek() == " " and re.match(r" +[A-Za-z\\]", tex[parser.pos :]):
                    parser.pos += 1
            out.append(parser.command(name))
        elif char in "_^":
            parser.pos += 1
            out.append(script(char, parser.argument()))
        elif char == "{":
            out.append(parser.group())
        elif char == "~":
            parser.pos += 1
            out.append(" ")
        else:
            parser.pos += 1
            out.append(char)
    text = "".join(out)
    letter = r"[A-Za-z\u0370-\u03ffℓ∂∇ℒℱℐℋ𝒵𝒞𝒫𝒟ℰ√∑∏∫]"
    text = re.sub(r"\x00(?=" + letter + ")", " ", text).replace("\x00", "")
    text = re.sub(r"(?<=[\w½)\u0370-\u03ff\u0300-\u036f])\x01", " ", text).replace("\x01", "")
    text = re.sub(r"\x02(?=" + letter + ")", " ", text).replace("\x02", "")
    text = re.sub(r"(?<=\S)  +", " ", text)
    text = re.sub(r"\( ", "(", text.strip(" ") if not tex.startswith(" ") else text)
    text = re.sub(r"\( ", "(", text)
    text = re.sub(r" \)", ")", text)
    return text


ROLE = re.compile(r":math:`([^`]*)`")
BORDER = re.compile(r"^( *)(=+)((?: +=+)+) *$")


def width(text):
    """Display width (combining accents take no column), as docutils measures a table cell."""
    return sum(0 if unicodedata.combining(c) else 1 for c in text)


def convert_roles(text):
    return ROLE.sub(lambda match: convert(match.group(1)), text)


def tables(source):
    """Convert the roles inside simple tables cell by cell and re-pad the columns to the new widths."""
    lines = source.split("\n")
    out, number = [], 0
    while number < len(lines):
        match = BORDER.match(lines[number])
        if not match:
            out.append(lines[number])
            number += 1
            continue
        indent = match.group(1)
        border = lines[number]
        starts = [m.start() for m in re.finditer(r"=+", border)]
        end = number + 1
        borders = 1
        while end < len(lines) and borders < 3:
            if BORDER.match(lines[end]):
                borders += 1
            end += 1
        rows = []
        for line in lines[number:end]:
            if BORDER.match(line):
                rows.append(None)
                continue
            cells = [line[a:b].strip() for a, b in zip(starts, starts[1:] + [None])]
            rows.append([convert_roles(cell) for cell in cells])
        widths = [max(width(row[k]) for row in rows if row) for k in range(len(starts))]
        widths = [max(w, 1) for w in widths]
        for row in rows:
            if row is None:
                out.append(indent + "  ".join("=" * w for w in widths))
            else:
                padded = [cell + " " * (w - width(cell)) for cell, w in zip(row, widths)]
                out.append((indent + "  ".join(padded)).rstrip())
        number = end
    return "\n".join(out)


def main(paths):
    for path in paths:
        source = open(path, encoding="utf-8").read()

        def replace(match):
            plain = convert(match.group(1))
            print(f"{path}: {match.group(1)!s}  ->  {plain}")
            return plain

        new = ROLE.sub(replace, tables(source))
        open(path, "w", encoding="utf-8").write(new)


if __name__ == "__main__":
    main(sys.argv[1:])
