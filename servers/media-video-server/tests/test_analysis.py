"""analyze_video and summarize_video against the loopback OpenAI fake, which checks the request:
the model, the question, one image part per sampled frame, and the transcript in the prompt."""

import json
import re

import pytest
from gaia_kit.core.settings import forget_settings, settings
from gaia_kit_testing import SPOKEN_SENTENCE, failed, ok, sent_content
from media_video_server import ask
from media_video_server.settings import VideoSettings

pytestmark = pytest.mark.anyio


def words(text: str) -> list[str]:
    return re.findall(r"[a-z]+", text.lower())


def sent(request):
    """(the text parts joined, the images in RGB) of the user message."""
    texts, images = sent_content(request)
    return "\n".join(texts), [image.convert("RGB") for image in images]


async def test_frames_and_the_spoken_words_reach_the_model(call, kit_env, talking, fake, monkeypatch):
    monkeypatch.delenv("AUDIO_TRANSCRIPTION_BACKEND", raising=False)
    fake.answer("The museum opens on Monday.")
    out = ok(await call("analyze_video", video_url="talk.mp4", question="When does the museum open?"))
    assert out.endswith("## Answer\n\nThe museum opens on Monday.")
    assert "Transcript of the audio" in out and "Model: fake-vision" in out
    request = fake.requests[0]
    assert request["model"] == "fake-vision" and fake.headers[0]["authorization"] == "Bearer sk-video-secret"
    prompt, images = sent(request)
    assert "Question: When does the museum open?" in prompt
    transcript = prompt.split("Transcript of the audio (times in the video):", 1)[1].split("Frame at")[0]
    assert set(words(SPOKEN_SENTENCE)) <= set(words(transcript))
    assert len(images) == len(re.findall(r"Frame at \d\d:\d\d\.\d\d", prompt)) >= 2
    assert images[0].size == (320, 240)


async def test_summary_of_a_silent_video_says_there_is_no_audio(call, kit_env, cuts, fake):
    fake.answer("Three colour cards: red, blue, green.")
    out = ok(await call("summarize_video", video_url="cuts.mp4", output_format="json"))
    body = json.loads(out)
    assert body["answer"] == "Three colour cards: red, blue, green." and body["transcript"] is None
    assert "no audio track" in body["audio"] and body["frame_times"] == [0, 1, 2, 3, 4, 5]
    prompt, images = sent(fake.requests[0])
    assert ask.SUMMARY_QUESTION in prompt and "no audio track" in prompt
    assert [img.getpixel((160, 120))[2] > 200 for img in images] == [False, False, True, True, False, False]
    fake.answer("Red.")
    text = ok(await call("summarize_video", video_url="cuts.mp4", end_time=2, output_format="text"))
    assert text.startswith("Red.") and "no audio track" in text
    assert len(sent(fake.requests[1])[1]) == 2


async def test_a_range_and_rate_choose_the_frames_and_long_spans_are_sampled(call, kit_env, cuts, fake):
    fake.answer("Blue.")
    body = json.loads(
        ok(await call("analyze_video", video_url="cuts.mp4", question="Colour?", start_time=2, end_time=4,
                      sample_rate=2, output_format="json"))
    )  # fmt: skip
    assert body["frame_times"] == [2.0, 2.5, 3.0, 3.5] and body["range"] == [2.0, 4.0]
    assert all(img.getpixel((160, 120))[2] > 200 for img in sent(fake.requests[0])[1])
    fake.answer("Many frames.")
    many = json.loads(
        ok(
            await call(
                "analyze_video", video_url="cuts.mp4", question="?", sample_rate=30, output_format="json"
            )
        )
    )
    assert len(many["frame_times"]) == settings(VideoSettings).max_frames == len(sent(fake.requests[1])[1])


async def test_without_a_model_the_error_names_the_variables(call, kit_env, cuts, no_llm):
    message = failed(await call("analyze_video", video_url="cuts.mp4", question="What is shown?"))
    assert "VIDEO_LLM_BASE_URL" in message and "MCP_LLM_MODEL_NAME" in message
    assert "VIDEO_LLM_MODEL_NAME" in failed(await call("summarize_video", video_url="cuts.mp4"))


async def test_bad_ranges_and_inputs_are_one_sentence_each(call, kit_env, cuts, fake):
    (kit_env.workspace / "notes.mp4").write_text("not a video")

    async def refusal(**arguments):
        return failed(await call("analyze_video", **{"video_url": "cuts.mp4", "question": "?", **arguments}))

    assert "end_time (1 s) must be after start_time (3 s)" in await refusal(start_time=3, end_time=1)
    assert "past the end of" in await refusal(start_time=60)
    assert "start_time must be 0 or more" in await refusal(start_time=-1)
    assert "sample_rate must be more than 0" in await refusal(sample_rate=0)
    assert "max_workers must be 1 or more" in await refusal(max_workers=0)
    assert "The question is empty" in await refusal(question="  ")
    assert "not a video file ffmpeg can read" in await refusal(video_url="notes.mp4")
    assert "not a video file" in failed(await call("summarize_video", video_url="notes.mp4"))
    assert not fake.requests


async def test_model_errors_come_back_without_the_key(call, kit_env, cuts, fake):
    fake.fail(400, "too many images sk-video-secret")
    message = failed(await call("analyze_video", video_url="cuts.mp4", question="?"))
    assert "HTTP 400" in message and "sk-video-secret" not in message


async def test_an_ffmpeg_past_its_deadline_is_one_sentence(call, kit_env, slow, fake, monkeypatch):
    monkeypatch.setenv("VIDEO_FFMPEG_TIMEOUT_S", "0.05")
    message = failed(await call("analyze_video", video_url="slow.mp4", question="?", sample_rate=1))
    assert "was stopped (VIDEO_FFMPEG_TIMEOUT_S)" in message and "ExceptionGroup" not in message
    monkeypatch.delenv("VIDEO_FFMPEG_TIMEOUT_S")
    forget_settings()  # settings are read once per process: the next call reads the default again
    fake.answer("Still serving.")
    assert "Still serving." in ok(await call("analyze_video", video_url="slow.mp4", question="?", end_time=2))
