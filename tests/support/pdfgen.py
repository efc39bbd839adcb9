"""Tiny PDFs written by hand, for what LibreOffice will not make: a page with no text
layer (only drawing, as a scan without OCR is), and text at chosen places."""

from __future__ import annotations


def pdf(pages: list[bytes], forms: dict[str, bytes] | None = None) -> bytes:
    """A valid PDF (with a correct xref) of these content streams, Helvetica as /F1,
    each of forms a form XObject its pages and the other forms may draw by name
    (`/Name Do`), and graphics
    states that paint nothing (`/Clear gs`: fill and stroke alpha 0), or paint at a fill
    alpha of 0.05 (`/Faint gs`) or 0.01 (`/Ghost gs`)."""
    objects: list[bytes] = []
    n = len(pages)
    forms = forms or {}
    first_form = 4 + 2 * n
    xobjects = " ".join(f"/{name} {first_form + i} 0 R" for i, name in enumerate(forms))
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {n} >>".encode())
    font = 3 + 2 * n
    for i, stream in enumerate(pages):
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R "
            f"/Resources << /Font << /F1 {font} 0 R >> /XObject << {xobjects} >> "
            "/ExtGState << /Clear << /ca 0 /CA 0 >> /Faint << /ca 0.05 >> "
            "/Ghost << /ca 0.01 >> >> >> >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for body in forms.values():
        objects.append(
            b"<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << "
            b"/F1 %d 0 R >> /XObject << %s >> >> /Length %d >>\nstream\n"
            % (font, xobjects.encode(), len(body))
            + body
            + b"\nendstream"
        )
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def text_at(lines: list[tuple[float, float, str]]) -> bytes:
    """A content stream showing each (x, y, text) line in 11 pt Helvetica."""
    ops = []
    for x, y, text in lines:
        safe = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        ops.append(f"BT /F1 11 Tf {x} {y} Td ({safe}) Tj ET")
    return "\n".join(ops).encode("latin-1")


SCAN = b"0.5 g 72 72 468 648 re f 0 g 100 600 m 500 600 l S"
