"""extract_text_content and list_supported_formats through the MCP protocol."""

import json
import textwrap

import pytest
from documents_txt_server.server import server
from gaia_kit.core.settings import forget_settings
from gaia_kit_testing import failed, ok, run_measured

pytestmark = pytest.mark.anyio


async def test_tools_are_listed():
    assert {tool.name for tool in await server.list_tools()} == {
        "extract_text_content",
        "list_supported_formats",
    }


async def test_markdown_output_with_statistics(call, env):
    (env.workspace / "poem.txt").write_text("Roses are red,\nviolets are blue.\n", encoding="utf-8")
    out = ok(await call("extract_text_content", file_path="poem.txt"))
    assert out.startswith("# poem.txt")
    assert "| Encoding | utf-8 (detected) |" in out
    assert "| Lines | 2 |" in out and "| Words | 6 |" in out and "| Characters | 33 |" in out
    assert "```\nRoses are red,\nviolets are blue.\n```" in out


async def test_json_html_and_text_formats(call, env):
    (env.workspace / "code.py").write_text("print('<hi>')\n")
    data = json.loads(ok(await call("extract_text_content", file_path="code.py", output_format="json")))
    assert data["content"] == "print('<hi>')\n" and data["content_type"] == "Python source"
    assert data["statistics"] == {
        "lines": 1,
        "words": 1,
        "characters": 14,
        "undecodable_characters": 0,
        "complete": True,
        "scanned_bytes": 14,
    }
    assert data["truncated"] is False and data["next_start_index"] is None
    page = ok(await call("extract_text_content", file_path="code.py", output_format="html"))
    assert page.startswith("<!DOCTYPE html>") and "<pre>print(&#x27;&lt;hi&gt;&#x27;)\n</pre>" in page
    plain = ok(await call("extract_text_content", file_path="code.py", output_format="text"))
    assert "Encoding: utf-8 (detected)" in plain and plain.rstrip().endswith("print('<hi>')")
    md = ok(await call("extract_text_content", file_path="code.py"))
    assert "```python\nprint('<hi>')\n```" in md
    assert failed(await call("extract_text_content", file_path="code.py", output_format="pdf"))


async def test_encodings_are_detected_or_taken_as_given(call, env):
    french = "Le cœur a ses raisons que la raison ne connaît point. Déjà vu, crème brûlée.\n" * 20
    (env.workspace / "fr.txt").write_bytes(french.encode("cp1252"))
    data = json.loads(ok(await call("extract_text_content", file_path="fr.txt", output_format="json")))
    assert data["encoding"] == "cp1252" and data["content"] == french
    (env.workspace / "utf16.txt").write_bytes(("naïve résumé ✓\n" * 10).encode("utf-16"))
    data = json.loads(ok(await call("extract_text_content", file_path="utf16.txt", output_format="json")))
    assert data["encoding"] == "utf-16" and data["content"] == "naïve résumé ✓\n" * 10
    (env.workspace / "bom.txt").write_bytes("\ufeffwith bom".encode())
    data = json.loads(ok(await call("extract_text_content", file_path="bom.txt", output_format="json")))
    assert data["encoding"] == "utf-8-sig" and data["content"] == "with bom"
    (env.workspace / "ru.txt").write_bytes(("Привет, как дела? Это тестовый текст.\n" * 10).encode("cp1251"))
    given = json.loads(
        ok(await call("extract_text_content", file_path="ru.txt", output_format="json", encoding="cp1251"))
    )
    assert given["encoding_detected"] is False and given["content"].startswith("Привет")
    wrong = json.loads(
        ok(await call("extract_text_content", file_path="ru.txt", output_format="json", encoding="utf-8"))
    )
    assert wrong["statistics"]["undecodable_characters"] > 0
    md = ok(await call("extract_text_content", file_path="ru.txt", encoding="utf-8"))
    assert "could not be decoded as utf-8" in md
    assert "Unknown encoding" in failed(
        await call("extract_text_content", file_path="ru.txt", encoding="klingon-8")
    )


async def test_paging_and_max_content_length(call, env, monkeypatch):
    monkeypatch.setenv("GAIA_MAX_OUTPUT_CHARS", "1000")
    forget_settings()
    body = "".join(f"{i:04d} words here\n" for i in range(300))  # 16 characters a line, 4800 in all
    (env.workspace / "long.txt").write_text(body)
    first = json.loads(ok(await call("extract_text_content", file_path="long.txt", output_format="json")))
    assert first["content"] == body[:1000] and first["next_start_index"] == 1000
    assert "start_index=1000" in first["note"] and "of 4,800" in first["note"]
    second = json.loads(
        ok(await call("extract_text_content", file_path="long.txt", output_format="json", start_index=4000))
    )
    assert second["content"] == body[4000:] and second["truncated"] is False
    short = ok(await call("extract_text_content", file_path="long.txt", max_content_length=30))
    assert body[:30] in short and body[:31] not in short and "start_index=30" in short
    capped = json.loads(
        ok(
            await call(
                "extract_text_content", file_path="long.txt", output_format="json", max_content_length=10**9
            )
        )
    )
    assert len(capped["content"]) == 1000
    assert "past the end" in ok(await call("extract_text_content", file_path="long.txt", start_index=10**6))
    assert "positive" in failed(
        await call("extract_text_content", file_path="long.txt", max_content_length=0)
    )
    assert failed(await call("extract_text_content", file_path="long.txt", start_index=-1))


async def test_statistics_are_partial_past_the_read_cap(call, env, monkeypatch):
    monkeypatch.setenv("GAIA_MAX_READ_BYTES", str(1 << 20))
    forget_settings()
    (env.workspace / "big.log").write_text("alpha beta\n" * 300_000)  # 3.3 MB
    data = json.loads(ok(await call("extract_text_content", file_path="big.log", output_format="json")))
    assert data["statistics"]["complete"] is False and data["statistics"]["scanned_bytes"] == 1 << 20
    md = ok(await call("extract_text_content", file_path="big.log"))
    assert "| Lines | ≥ " in md and "counted over the first" in md


async def test_word_and_line_counts_across_chunk_boundaries(call, env):
    from documents_txt_server import reading

    chunk = reading.CHUNK_BYTES
    body = "a" * (chunk - 2) + " bcd efg\nlast line without newline"
    (env.workspace / "edge.txt").write_text(body)
    data = json.loads(ok(await call("extract_text_content", file_path="edge.txt", output_format="json")))
    assert data["statistics"]["words"] == len(body.split())
    assert data["statistics"]["lines"] == 2
    assert data["statistics"]["characters"] == len(body)


async def test_bad_inputs(call, env):
    assert "does not exist" in failed(await call("extract_text_content", file_path="missing.txt"))
    assert "directory" in failed(await call("extract_text_content", file_path="."))
    assert "outside the allowed directories" in failed(
        await call("extract_text_content", file_path="/etc/hosts")
    )
    (env.workspace / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 100)
    assert "binary" in failed(await call("extract_text_content", file_path="pic.png"))
    (env.workspace / "report.pdf").write_bytes(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n")
    message = failed(await call("extract_text_content", file_path="report.pdf"))
    assert "binary" in message and "documents-pdf-server" in message
    (env.workspace / "blob.dat").write_bytes(bytes(range(256)) * 10)
    assert "binary" in failed(await call("extract_text_content", file_path="blob.dat"))
    assert "binary" in failed(await call("extract_text_content", file_path="blob.dat", encoding="latin-1"))
    assert failed(await call("extract_text_content", file_path=123))
    assert failed(await call("extract_text_content"))


async def test_empty_file_and_dataset_alias(call, env):
    (env.workspace / "empty.txt").write_text("")
    assert "[The file is empty.]" in ok(await call("extract_text_content", file_path="empty.txt"))
    (env.dataset / "q.md").write_text("# Title\n")
    out = ok(await call("extract_text_content", file_path="/workspace/gaia_dataset/q.md"))
    assert "| Path | /workspace/gaia_dataset/q.md |" in out and "```markdown\n# Title\n```" in out


async def test_list_supported_formats(call):
    out = ok(await call("list_supported_formats"))
    assert "Markdown: .md, .markdown" in out and "Python source: .py" in out and "json" in out


@pytest.mark.slow
def test_a_1gb_file_is_streamed_in_bounded_memory(tmp_path):
    big = tmp_path / "huge.txt"
    block = "".join(f"line {i} of a large log file with some words\n" for i in range(20_000)).encode()
    with open(big, "wb") as handle:
        for _ in range((1 << 30) // len(block) + 1):
            handle.write(block)
    script = textwrap.dedent(
        f"""
        import json
        from pathlib import Path
        from documents_txt_server.reading import extract
        path = Path({str(big)!r})
        with open(path, "rb") as handle:
            head = extract(handle, path, "huge.txt", None, 0, 40_000, 64 << 20)
            deep = extract(handle, path, "huge.txt", None, 900_000_000, 40_000, 64 << 20)
        print(json.dumps({{
            "head": head.content[:30], "head_more": head.more, "complete": head.stats.complete,
            "deep_len": len(deep.content), "deep_more": deep.more,
        }}))
        """
    )
    report = run_measured(script, timeout=600)
    assert report["head"] == "line 0 of a large log file wit" and report["head_more"]
    assert report["complete"] is False
    assert report["deep_len"] == 40_000 and report["deep_more"]
    assert report["peak_rss_kb"] < 200 * 1024, report
