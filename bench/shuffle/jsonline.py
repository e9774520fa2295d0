"""bench/shuffle/jsonline.py: prints one JSON object on one line, for run.sh.

    python3 jsonline.py KEY=VALUE ...

VALUE is a number when it parses as one, else a string; KEY=@FILE is the
list of the JSON values on the non-empty lines of FILE; KEY=%FILE is the one
JSON value in FILE (null when FILE is empty or not JSON; the text is kept
under KEY_text then).
"""
import json
import sys


def scalar(v):
    for cast in (int, float):
        try:
            return cast(v)
        except ValueError:
            pass
    return v


def main():
    obj = {}
    for arg in sys.argv[1:]:
        key, _, value = arg.partition("=")
        if value.startswith("@"):
            items = []
            with open(value[1:]) as f:
                for line in f:
                    line = line.strip()
                    if line:
                        try:
                            items.append(json.loads(line))
                        except ValueError:
                            items.append({"text": line})
            obj[key] = items
        elif value.startswith("%"):
            text = open(value[1:]).read()
            try:
                obj[key] = json.loads(text)
            except ValueError:
                obj[key] = None
                obj[key + "_text"] = text.strip()[-2000:]
        else:
            obj[key] = scalar(value)
    print(json.dumps(obj, separators=(",", ":")))


if __name__ == "__main__":
    main()
