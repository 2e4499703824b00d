# Reads a flame graph SVG (perf offwake report --svg) with Python's XML parser, which refuses
# a document that is not well-formed, and prints what the tests check, one item a line:
#   svg   NAME=VALUE...            the root element's attributes
#   text  CLASS CONTENT            the title ("title") and subtitle ("sub") lines
#   legend KIND FILL LABEL
#   frame PATH KIND VALUE SKIP X Y WIDTH FILL LABEL TITLE
# Fields are separated by tabs; PATH is the data-name of the frame and of its ancestors, bottom
# first, joined by U+001F. '%', tab, newline, carriage return and U+001F are written %XX.
#   usage: python3 svg_frames.py FILE.svg
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"


def enc(s):
    return "".join("%%%02X" % ord(c) if c in "%\t\n\r\x1f" else c for c in (s or ""))


def line(*fields):
    print("\t".join(enc(f) for f in fields))


def frames(parent, path):
    for g in parent:
        if g.tag != NS + "g" or g.get("class") != "f":
            continue
        p = path + [g.get("data-name")]
        rect = g.find(NS + "rect")
        text = g.find(NS + "text")
        title = g.find(NS + "title")
        fields = [g.get("data-kind"), g.get("data-value"), g.get("data-skip", "0"), rect.get("x"), rect.get("y"),
                  rect.get("width"), rect.get("fill"), text.text if text is not None else "",
                  title.text if title is not None else ""]
        print("\t".join(["frame", "\x1f".join(enc(n) for n in p)] + [enc(f) for f in fields]))
        frames(g, p)


def main():
    root = ET.parse(sys.argv[1]).getroot()
    if root.tag != NS + "svg":
        sys.exit("not an SVG document: " + root.tag)
    print("\t".join(["svg"] + [enc(k) + "=" + enc(v) for k, v in sorted(root.attrib.items())]))
    for t in root.iter(NS + "text"):
        if t.get("class") in ("title", "sub"):
            line("text", t.get("class"), t.text)
    for g in root.iter(NS + "g"):
        if g.get("data-legend-kind"):
            line("legend", g.get("data-legend-kind"), g.find(NS + "rect").get("fill"), g.find(NS + "text").text)
    top = root.find(".//" + NS + "g[@id='frames']")
    if top is None:
        sys.exit("no frames group")
    frames(top, [])


main()
