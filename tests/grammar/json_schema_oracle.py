"""Ground truth for the JSON Schema grammar tests, judged by the `jsonschema` package.

Reads one JSON request on stdin and answers on stdout:
  {"op": "cases", "seed": S, "count": N}
      N random schemas in the subset Arbor compiles, each with documents `jsonschema` accepts
      (written in the form Arbor generates: declared properties in order, compact, spaced or
      indented) and documents it rejects (a required property dropped, a value of the wrong
      type, an undeclared property where additionalProperties is false, an enum value outside
      the list, too few or too many items, a discriminated union's tag changed, a number out of
      its bounds, a string too long, cut-off text).
  {"op": "validate", "items": [{"schema": TEXT, "document": TEXT}, ...]}
      For each item "" when the document parses and validates, else why not. Formats are
      asserted: jsonschema's draft 2020-12 format checker, and for the formats whose optional
      packages it lacks here (date-time, time, hostname, uri, duration) checks of their RFCs'
      grammars with the standard library's calendar and URL parsing.
"""

import datetime
import json
import random
import re
import sys
import urllib.parse

import jsonschema

NAMES = ["id", "name", "age", "tags", "ok", "score", "a\"b", "naïve", "x y", "items", "v", "kind"]
STRINGS = ["", "hello", "quote \" inside", "back\\slash", "tab\tand\nnewline", "naïve café",
           "日本語", "emoji 🙂", "/slash", "\u0001ctrl"]


class Generator:
    def __init__(self, rng):
        self.rng = rng
        self.defs = {}

    def schema(self, depth):
        r = self.rng.random()
        if depth >= 3 or r < 0.35:
            return self.leaf()
        if r < 0.6:
            return self.object(depth)
        if r < 0.65:
            return {"type": "object", "additionalProperties": self.schema(depth + 1)}
        if r < 0.8:
            return self.array(depth)
        if r < 0.85:
            return {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}][
                :self.rng.randint(2, 3)]}
        if r < 0.9:
            return self.tagged(depth)
        name = "Def%d" % len(self.defs)
        self.defs[name] = None  # Reserved, so the definitions it nests take other names.
        self.defs[name] = self.object(depth + 1)
        return {"$ref": "#/$defs/" + name}

    def leaf(self):
        kind = self.rng.choice(["string", "number", "integer", "boolean", "null", "enum",
                                "const", "nullable", "bounded", "short"])
        if kind == "bounded":
            low = self.rng.randint(-50, 50)
            return {"type": self.rng.choice(["integer", "number"]), "minimum": low,
                    "maximum": low + self.rng.randint(0, 200)}
        if kind == "short":
            low = self.rng.randint(0, 3)
            return {"type": "string", "minLength": low, "maxLength": low + self.rng.randint(0, 6)}
        if kind == "enum":
            values = self.rng.sample(["red", "green", "blue", 1, 12, 2.5, True, None, "a\"q"],
                                     self.rng.randint(1, 4))
            return {"enum": values, "description": "a choice"}
        if kind == "const":
            return {"const": self.rng.choice(["fixed", 7, False])}
        if kind == "nullable":
            return {"type": [self.rng.choice(["string", "integer", "number"]), "null"]}
        return {"type": kind, "title": kind}

    def object(self, depth):
        names = self.rng.sample(NAMES, self.rng.randint(0, 5))
        schema = {"type": "object",
                  "properties": {n: self.schema(depth + 1) for n in names}}
        if names:
            schema["required"] = [n for n in names if self.rng.random() < 0.6]
        if self.rng.random() < 0.6:
            schema["additionalProperties"] = False
        return schema

    def tagged(self, depth):
        """A discriminated union: objects told apart by their first property's constant."""
        alternatives = []
        for tag in self.rng.sample(["circle", "square", "a\"b", "naïve"], self.rng.randint(2, 3)):
            alternative = self.object(depth + 1)
            alternative["properties"] = {"shape": {"const": tag}, **alternative["properties"]}
            alternative["required"] = ["shape"] + alternative.get("required", [])
            alternatives.append(alternative)
        return {self.rng.choice(["anyOf", "oneOf"]): alternatives}

    def array(self, depth):
        schema = {"type": "array", "items": self.schema(depth + 1)}
        if self.rng.random() < 0.4:
            schema["minItems"] = self.rng.randint(0, 2)
        if self.rng.random() < 0.4:
            schema["maxItems"] = schema.get("minItems", 0) + self.rng.randint(0, 3)
        return schema

    def root(self):
        schema = self.object(0) if self.rng.random() < 0.8 else self.schema(0)
        if self.defs:
            schema["$defs"] = self.defs
        return schema


def resolve(schema, root):
    while "$ref" in schema:
        schema = root["$defs"][schema["$ref"].split("/")[-1]]
    return schema


def instance(schema, root, rng):
    """A value of `schema` in the form Arbor's grammar generates."""
    schema = resolve(schema, root)
    for keyword in ("anyOf", "oneOf"):
        if keyword in schema:
            return instance(rng.choice(schema[keyword]), root, rng)
    if "enum" in schema:
        return rng.choice(schema["enum"])
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = rng.choice(kind)
    if kind == "object":
        out = {}
        if isinstance(schema.get("additionalProperties"), dict):
            for name in rng.sample(NAMES, rng.randint(0, 3)):
                out[name] = instance(schema["additionalProperties"], root, rng)
            return out
        for name, sub in schema.get("properties", {}).items():
            if name in schema.get("required", []) or rng.random() < 0.5:
                out[name] = instance(sub, root, rng)
        return out
    if kind == "array":
        low = schema.get("minItems", 0)
        high = schema.get("maxItems", low + 3)
        return [instance(schema["items"], root, rng) for _ in range(rng.randint(low, high))]
    if kind == "string":
        if "minLength" not in schema:
            return rng.choice(STRINGS)
        # A constrained string writes control characters only as short escapes, never \u.
        fits = [t for t in STRINGS if schema["minLength"] <= len(t) <= schema["maxLength"]
                and all(c >= " " or c in "\b\f\n\r\t" for c in t)]
        return rng.choice(fits) if fits else "é" * schema["minLength"]
    if "minimum" in schema:
        return rng.randint(schema["minimum"], schema["maximum"])
    if kind == "integer":
        return rng.choice([0, 7, -3, 123456789012345])
    if kind == "number":
        return rng.choice([0, 1.5, -0.25, 3e-05, 12345.678, 2e+20])
    if kind == "boolean":
        return rng.choice([True, False])
    return None


def write(value, rng):
    # Keys and enum values as Arbor writes them: UTF-8 as it is, escapes only where JSON needs
    # them (what ensure_ascii=False gives).
    style = rng.randint(0, 3)
    if style == 0:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if style == 1:
        return json.dumps(value, ensure_ascii=False)
    if style == 2:
        return json.dumps(value, indent=2, ensure_ascii=False)
    return json.dumps(value, indent="\t", ensure_ascii=False)


def mutations(value, schema, root, rng):
    """Values near `value` that may break `schema` (the caller keeps those that do)."""
    out = [[value], "text", 1.5, None]
    schema = resolve(schema, root)
    if isinstance(value, dict):
        for name in list(value):
            smaller = dict(value)
            del smaller[name]
            out.append(smaller)
            wrong = dict(value)
            wrong[name] = {"nested": [1]} if not isinstance(value[name], dict) else "x"
            out.append(wrong)
        extra = dict(value)
        extra["undeclared"] = 1
        out.append(extra)
    if isinstance(value, list):
        out.append(value + value[:1] * 4)
        out.append(value[:-1])
        out.append([])
    if isinstance(value, str):
        out.append(value + "!")
        out.append(value + "!" * 8)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        out.extend([value + 300, value - 300, value + 0.5])
    return out


def cases(seed, count):
    rng = random.Random(seed)
    result = []
    for _ in range(count):
        generator = Generator(rng)
        schema = generator.root()
        validator = jsonschema.Draft202012Validator(schema)
        valid, invalid = [], []
        for _ in range(6):
            value = instance(schema, schema, rng)
            assert validator.is_valid(value), (schema, value)
            text = write(value, rng)
            valid.append(text)
            if len(text) > 1:
                invalid.append(text[:rng.randint(1, len(text) - 1)])
            for mutated in mutations(value, schema, schema, rng):
                if not validator.is_valid(mutated):
                    invalid.append(write(mutated, rng))
        result.append({"schema": json.dumps(schema), "valid": valid,
                       "invalid": [t for t in invalid if not parses_valid(validator, t)]})
    return {"cases": result}


def parses_valid(validator, text):
    try:
        return validator.is_valid(json.loads(text))
    except ValueError:
        return False


def rfc3339_date_time(text):
    """RFC 3339 section 5.6 date-time, the calendar checked by datetime."""
    if not re.fullmatch(r"\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)",
                        text):
        return False
    try:
        datetime.datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def hostname(text):
    """RFC 1123 host name: labels of letters, digits and inner hyphens, 63 octets at most each,
    253 in all, not ending in an all-numeric label."""
    labels = text.split(".")
    return (len(text) <= 253 and not labels[-1].isdigit() and
            all(re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?", label)
                and label[2:4] != "--" for label in labels))


def uri(text):
    """RFC 3986 URI: a scheme, and only characters the RFC allows."""
    allowed = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*")
    parts = urllib.parse.urlsplit(text)
    return bool(re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", parts.scheme or "")) and bool(
        allowed.fullmatch(text)) and text.count("#") <= 1


def duration(text):
    """RFC 3339 appendix A duration."""
    second, minute = r"\d+S", r"\d+M(\d+S)?"
    time = rf"T(\d+H({minute})?|{minute}|{second})"
    day, month = r"\d+D", r"\d+M(\d+D)?"
    date = rf"({day}|{month}|\d+Y({month})?)({time})?"
    return bool(re.fullmatch(rf"P({date}|{time}|\d+W)", text))


def format_checker():
    checker = jsonschema.FormatChecker(formats=())
    checker.checkers = dict(jsonschema.Draft202012Validator.FORMAT_CHECKER.checkers)
    extra = {"date-time": rfc3339_date_time, "time": lambda t: rfc3339_date_time("1970-01-01T" + t),
             "hostname": hostname, "uri": uri, "duration": duration}
    for name, check in extra.items():
        if name not in checker.checkers:
            checker.checks(name)(lambda instance, check=check: not isinstance(instance, str)
                                 or check(instance))
    return checker


FORMAT_CHECKER = format_checker()


def validate(items):
    results = []
    for item in items:
        try:
            document = json.loads(item["document"])
        except ValueError as e:
            results.append("not JSON: %s" % e)
            continue
        error = jsonschema.exceptions.best_match(
            jsonschema.Draft202012Validator(json.loads(item["schema"]),
                                            format_checker=FORMAT_CHECKER).iter_errors(document))
        results.append("" if error is None else error.message)
    return {"results": results}


def main():
    request = json.load(sys.stdin)
    if request["op"] == "cases":
        answer = cases(request["seed"], request["count"])
    else:
        answer = validate(request["items"])
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
