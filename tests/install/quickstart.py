"""The README's quick start through the installed wheel's API
(scripts/test-packages runs it in a fresh venv after
``pip install dist/toolprune-V-py3-none-any.whl``):

    python quickstart.py prune THRESHOLD REQUEST FILE   the body on stdout (as ``toolprune prune``)
    python quickstart.py load WASM                       Pruner.load of that component: the
                                                         error's message on stdout, exit 1
"""

import sys

from toolprune import Pruner


def main(argv: list) -> int:
    if len(argv) == 4 and argv[0] == "prune":
        threshold, request, file = argv[1:]
        with open(file, encoding="utf-8", newline="") as f:  # newline="": CRLF stays CRLF
            text = f.read()
        pruner = Pruner.load()
        conversation = pruner.conversation(enabled=True, threshold=threshold)
        result = conversation.turn(request).on_tool_result(tool="fetch", text=text, prunable=True)
        sys.stdout.buffer.write(result.body.encode("utf-8"))
        return 0
    if len(argv) == 2 and argv[0] == "load":
        try:
            Pruner.load(wasm=argv[1])
        except Exception as error:  # noqa: BLE001 - the message is the point
            print(error)
            return 1
        print("loaded")
        return 0
    print("usage: quickstart.py prune THRESHOLD REQUEST FILE | load WASM", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
