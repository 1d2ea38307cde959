"""HTTP header blocks read without the email package's feed parser (stdlib only).

http.client.parse_headers, which http.server and http.client use for every request and answer, runs
the email package's generic feed parser: 30-90 us a header block on the lab's machines, the largest
cost of an emulator request. The lab polls the emulator ~60 times a second, so read_headers builds the
same http.client.HTTPMessage directly from plain "Name: value" lines (a quarter of the time), and hands
any other block (folded lines, control or non-ASCII bytes, ...) to the email parser as before.
"""

import email.parser
import http.client
import re

# The limits of http.client's own reader (http.client._MAXLINE, _MAXHEADERS).
MAX_LINE = 65536
MAX_HEADERS = 100

# What the email parser (compat32) reads as name and value: the name up to the first colon, the value
# without its leading blanks and trailing line ending. Anything else takes the email parser's path.
_PLAIN = re.compile(r"([!-9;-~]+):[ \t]*([\t -~]*?)\r?\n?")


def read_headers(fp):
    """http.client.parse_headers(fp): the header lines up to the empty one, as an HTTPMessage."""
    lines = []
    while True:
        line = fp.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise http.client.LineTooLong("header line")
        lines.append(line)
        if len(lines) > MAX_HEADERS:
            raise http.client.HTTPException("got more than %d headers" % MAX_HEADERS)
        if line in (b"\r\n", b"\n", b""):
            break
    msg = http.client.HTTPMessage()
    for line in lines[:-1]:
        match = _PLAIN.fullmatch(line.decode("iso-8859-1"))
        if match is None:
            return email.parser.Parser(_class=http.client.HTTPMessage).parsestr(
                b"".join(lines).decode("iso-8859-1"))
        msg.set_raw(match.group(1), match.group(2))
    return msg
