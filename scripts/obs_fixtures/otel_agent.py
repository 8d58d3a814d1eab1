"""A small tool-using agent on the `openai` client, traced by OpenTelemetry, written as an OTel Collector's `file`
exporter writes what it receives: OTLP/JSON, one Export{Trace,Logs,Metrics}ServiceRequest per line.

usage: otel_agent.py MODE OUT PORT
  (MODE tools writes the agent's tool definitions to OUT)
  MODE  latest-span   opentelemetry-instrumentation-openai-v2, latest experimental convention, content on spans
        latest-event  the same, content on `gen_ai.client.inference.operation.details` events (log records)
        legacy        openai-v2 <= 2.3b0 with SDK 1.37: the v1.30 events (`gen_ai.user.message`, `gen_ai.choice`…)
        openinference openinference-instrumentation-openai (Arize Phoenix's conventions)
  OUT   a file (traces, logs and metrics side by side), or a directory for one file per signal (legacy)
  PORT  the stub server (stub.py) on 127.0.0.1

No Collector binary is installable from the package registries this project uses, so the lines are written the
way the Collector's file exporter writes them: the request the SDK's own OTLP exporters send
(`opentelemetry.exporter.otlp.proto.common` encoders), in the OTLP/JSON encoding (protobuf's JSON mapping with
`google.protobuf.json_format`, enums as integers, trace and span ids as hex as the OTLP/JSON spec requires).

Two conversations: "build" (four model calls, parallel tool calls, a final answer) and "port" (one model call
whose tool call the agent runs before it stops at its turn limit, so only the `execute_tool` span holds the last
result). The app wraps each tool run in an `execute_tool` span, as the GenAI conventions ask.
"""
import base64
import contextvars
import json
import os
import sys

MODE, OUT, PORT = sys.argv[1], sys.argv[2], int(sys.argv[3])

FILES = {
    "config.ini": "[server]\nport = 8443\nworkers = 4\n# the cache directory is created at start-up\n"
                  "cache_dir = /var/cache/app\nlog_level = info\n",
    "build.log": "\n".join(f"[{i:03d}] compiling module_{i}.c ... ok" for i in range(12))
    + "\nerror: undefined reference to `zlib_inflate_init' in module_7.o\nbuild failed with 1 error\n",
}
TOOLS = [
    {"type": "function", "function": {
        "name": "read_file", "description": "Read a file of the project.",
        "parameters": {"type": "object", "properties": {
            "path": {"type": "string", "description": "The file's path, relative to the project root."}},
            "required": ["path"]}}},
    {"type": "function", "function": {
        "name": "run", "description": "Run a shell command and return its output.",
        "parameters": {"type": "object", "properties": {
            "cmd": {"type": "string", "description": "The command line."}}, "required": ["cmd"]}}},
]


TOOL_SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
if MODE == "tools":
    # The tool definitions the agent sends, for `ctxbench import --tools` (openai-v2 does not record them).
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(TOOLS, f, indent=1)
    sys.exit(0)
if MODE.startswith("latest"):
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = (
        "SPAN_ONLY" if MODE == "latest-span" else "EVENT_ONLY")
elif MODE == "legacy":
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"

from google.protobuf.json_format import MessageToJson  # noqa: E402
from opentelemetry import _logs, metrics, trace  # noqa: E402
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.sdk._logs import LoggerProvider  # noqa: E402
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogExporter, LogExportResult  # noqa: E402
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult  # noqa: E402

import openai  # noqa: E402

HEX_IDS = ("traceId", "spanId", "parentSpanId")


def hex_ids(v):
    if isinstance(v, dict):
        return {k: (base64.b64decode(x).hex() if k in HEX_IDS and isinstance(x, str) else hex_ids(x))
                for k, x in v.items()}
    if isinstance(v, list):
        return [hex_ids(x) for x in v]
    return v


def path(signal):
    return os.path.join(OUT, f"{signal}.jsonl") if os.path.isdir(OUT) else OUT


def write(signal, request):
    line = json.dumps(hex_ids(json.loads(MessageToJson(request, use_integers_for_enums=True))),
                      separators=(",", ":"), ensure_ascii=False)
    with open(path(signal), "a", encoding="utf-8") as f:
        f.write(line + "\n")


class CollectorFileSpans(SpanExporter):
    def export(self, spans):
        write("traces", encode_spans(spans))
        return SpanExportResult.SUCCESS


class CollectorFileLogs(LogExporter):
    def export(self, batch):
        write("logs", encode_logs(batch))
        return LogExportResult.SUCCESS

    def shutdown(self):
        pass

    def force_flush(self, timeout_millis=30000):
        return True


CONVERSATION = contextvars.ContextVar("conversation", default=None)


class ConversationId(SpanProcessor):
    """Sets `gen_ai.conversation.id` on every span started inside a conversation (what an agent framework does)."""

    def on_start(self, span, parent_context=None):
        if CONVERSATION.get():
            span.set_attribute("gen_ai.conversation.id", CONVERSATION.get())


resource = Resource.create({"service.name": "ctxbench-fixture-agent"})
tracer_provider = TracerProvider(resource=resource)
if MODE.startswith("latest"):
    tracer_provider.add_span_processor(ConversationId())
span_processor = BatchSpanProcessor(CollectorFileSpans())
tracer_provider.add_span_processor(span_processor)
trace.set_tracer_provider(tracer_provider)
logger_provider = LoggerProvider(resource=resource)
log_processor = BatchLogRecordProcessor(CollectorFileLogs())
logger_provider.add_log_record_processor(log_processor)
_logs.set_logger_provider(logger_provider)
metric_reader = InMemoryMetricReader()
metrics.set_meter_provider(MeterProvider(resource=resource, metric_readers=[metric_reader]))
if MODE == "legacy":
    from opentelemetry._events import set_event_logger_provider
    from opentelemetry.sdk._events import EventLoggerProvider

    set_event_logger_provider(EventLoggerProvider(logger_provider))

if MODE == "openinference":
    from openinference.instrumentation import using_session
    from openinference.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=tracer_provider)
else:
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    OpenAIInstrumentor().instrument()

tracer = trace.get_tracer("ctxbench.fixture.agent")

def run_tool(name, args):
    if name == "read_file":
        return FILES.get(args["path"], f"error: no such file: {args['path']}")
    return f"$ {args['cmd']}\nsrc/io/inflate.c:41:    zlib_inflate_init(&stream);\nexit status 0\n"


def execute_tool(call):
    name, args = call.function.name, json.loads(call.function.arguments)
    if MODE.startswith("latest"):
        from opentelemetry.util.genai.handler import get_telemetry_handler

        with get_telemetry_handler().tool(name, tool_call_id=call.id, tool_type="function") as inv:
            inv.arguments = args
            inv.tool_result = run_tool(name, args)
            return inv.tool_result
    if MODE == "openinference":
        # OpenInference's TOOL span, from its own tracer; `tool.id` names the call it answers.
        from openinference.instrumentation import OITracer, TraceConfig

        oi_tracer = OITracer(tracer, config=TraceConfig())
        with oi_tracer.start_as_current_span(name, openinference_span_kind="tool") as span:
            span.set_tool(name=name, parameters=TOOL_SCHEMAS[name])
            span.set_input(call.function.arguments, mime_type="application/json")
            result = run_tool(name, args)
            span.set_output(result)
            span.set_attribute("tool.id", call.id)
            return result
    # The semantic conventions' execute_tool span, written by the app (openai-v2 2.3b0 has no helper for it).
    with tracer.start_as_current_span(f"execute_tool {name}", kind=trace.SpanKind.INTERNAL) as span:
        result = run_tool(name, args)
        span.set_attributes({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                             "gen_ai.tool.call.id": call.id, "gen_ai.tool.type": "function",
                             "gen_ai.tool.call.arguments": call.function.arguments,
                             "gen_ai.tool.call.result": result})
        return result


def agent(client, task, max_turns):
    messages = [{"role": "system", "content": "You are a careful build engineer. Use the tools to inspect the project."},
                {"role": "user", "content": task}]
    for _ in range(max_turns):
        r = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
        m = r.choices[0].message
        messages.append(m.model_dump(exclude_none=True))
        if not m.tool_calls:
            return
        for call in m.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": execute_tool(call)})


def conversation(client, name, task, max_turns):
    # Unique per run, as real conversation ids are (a folder of several exports is read together).
    token = CONVERSATION.set(f"{MODE}-{name}")
    try:
        kind = ({"openinference.span.kind": "AGENT"} if MODE == "openinference"
                else {"gen_ai.operation.name": "invoke_agent"})
        with tracer.start_as_current_span(f"invoke_agent {name}", attributes=kind):
            if MODE == "openinference" and name == "build":
                with using_session(f"session-{MODE}-{name}"):
                    agent(client, task, max_turns)
            else:
                agent(client, task, max_turns)
    finally:
        CONVERSATION.reset(token)


client = openai.OpenAI(base_url=f"http://127.0.0.1:{PORT}/v1", api_key="stub-key")
if MODE.startswith("latest"):
    # Both conversations in one trace: gen_ai.conversation.id tells them apart.
    with tracer.start_as_current_span("session"):
        conversation(client, "build", "The build of our project fails. Find out why and say which library to link.", 8)
        conversation(client, "port", "Which port does the server listen on? Read config.ini.", 1)
else:
    # One trace per conversation.
    conversation(client, "build", "The build of our project fails. Find out why and say which library to link.", 8)
    conversation(client, "port", "Which port does the server listen on? Read config.ini.", 1)

span_processor.force_flush()
log_processor.force_flush()
data = metric_reader.get_metrics_data()
if data is not None and data.resource_metrics:
    write("metrics", encode_metrics(data))
