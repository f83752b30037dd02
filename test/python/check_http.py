"""tritonclient.http and tritonclient.http.aio against infernode: the calls the client repository's
examples do not make (repository, statistics, trace and log settings, shared-memory status,
classification, JSON tensors, errors), each with what Triton answers."""
import json
import urllib.error
import urllib.request

import numpy as np
import tritonclient.http as httpclient
import tritonclient.http.aio as aiohttpclient
import tritonclient.utils.shared_memory as shm
import checks
from checks import check, expect, expect_error, expect_error_async, main

MODELS = {"simple", "simple_int8", "simple_string", "simple_identity", "simple_sequence",
          "simple_dyna_sequence", "simple_string_dyna_sequence", "repeat_int32"}
A = np.arange(16, dtype=np.int32).reshape(1, 16)
B = np.ones((1, 16), dtype=np.int32)


def simple_inputs(a=A, b=B, binary=True):
    inputs = [httpclient.InferInput("INPUT0", list(a.shape), "INT32"),
              httpclient.InferInput("INPUT1", list(b.shape), "INT32")]
    inputs[0].set_data_from_numpy(a, binary_data=binary)
    inputs[1].set_data_from_numpy(b, binary_data=binary)
    return inputs


@check
def server_metadata_lists_the_extensions(url):
    md = httpclient.InferenceServerClient(url).get_server_metadata()
    expect("version" in md and "name" in md, f"metadata {md}")
    for ext in ("classification", "sequence", "model_repository", "schedule_policy", "model_configuration",
                "system_shared_memory", "binary_tensor_data", "parameters", "statistics", "trace", "logging"):
        expect(ext in md["extensions"], f"extension {ext} missing from {md['extensions']}")


@check
def model_metadata_and_config(url):
    client = httpclient.InferenceServerClient(url)
    md = client.get_model_metadata("simple")
    expect(md["name"] == "simple" and md["versions"] == ["1"], f"metadata {md}")
    expect(md["platform"] == "onnxruntime_onnx", f"platform {md['platform']}")
    expect([(i["name"], i["datatype"], i["shape"]) for i in md["inputs"]] ==
           [("INPUT0", "INT32", [-1, 16]), ("INPUT1", "INT32", [-1, 16])], f"inputs {md['inputs']}")
    config = client.get_model_config("simple")
    expect(config["max_batch_size"] == 8, f"max_batch_size {config['max_batch_size']}")
    expect(config["input"][0]["data_type"] == "TYPE_INT32" and config["input"][0]["dims"] == [16], f"input {config['input'][0]}")
    expect(client.get_model_metadata("simple", model_version="1")["name"] == "simple", "versioned metadata")


@check
def repository_index_lists_every_model_ready(url):
    index = httpclient.InferenceServerClient(url).get_model_repository_index()
    by_name = {m["name"]: m for m in index}
    expect(set(by_name) == MODELS, f"index names {sorted(by_name)}")
    expect(all(m.get("state") == "READY" and m.get("version") == "1" for m in index), f"index {index}")


@check
def json_and_binary_tensors_both_ways(url):
    client = httpclient.InferenceServerClient(url)
    outputs = [httpclient.InferRequestedOutput("OUTPUT0", binary_data=False),
               httpclient.InferRequestedOutput("OUTPUT1", binary_data=True)]
    result = client.infer("simple", simple_inputs(binary=False), outputs=outputs, request_id="json-1")
    expect((result.as_numpy("OUTPUT0") == A + B).all(), f"OUTPUT0 {result.as_numpy('OUTPUT0')}")
    expect((result.as_numpy("OUTPUT1") == A - B).all(), f"OUTPUT1 {result.as_numpy('OUTPUT1')}")
    response = result.get_response()
    expect(response["id"] == "json-1", f"id {response.get('id')}")
    expect(response["model_name"] == "simple" and response["model_version"] == "1", f"response {response}")
    out0 = next(o for o in response["outputs"] if o["name"] == "OUTPUT0")
    expect(out0["datatype"] == "INT32" and out0["shape"] == [1, 16] and "data" in out0, f"OUTPUT0 {out0}")


@check
def classification_output(url):
    client = httpclient.InferenceServerClient(url)
    outputs = [httpclient.InferRequestedOutput("OUTPUT0", class_count=3)]
    result = client.infer("simple", simple_inputs(), outputs=outputs)
    classes = result.as_numpy("OUTPUT0")
    expect(classes.shape == (1, 3), f"shape {classes.shape}")
    top = [c.decode().split(":") for c in classes[0]]
    expect([(float(v), int(i)) for v, i in top] == [(16.0, 15), (15.0, 14), (14.0, 13)], f"classes {classes}")


@check
def batch_of_two(url):
    a = np.arange(32, dtype=np.int32).reshape(2, 16)
    b = np.full((2, 16), 3, dtype=np.int32)
    result = httpclient.InferenceServerClient(url).infer("simple", simple_inputs(a, b))
    expect((result.as_numpy("OUTPUT0") == a + b).all() and (result.as_numpy("OUTPUT1") == a - b).all(), "batch results")


@check
def statistics_count_inferences(url):
    client = httpclient.InferenceServerClient(url)
    before = client.get_inference_statistics("simple")["model_stats"][0]
    client.infer("simple", simple_inputs())
    stats = client.get_inference_statistics("simple")["model_stats"][0]
    expect(stats["name"] == "simple" and stats["version"] == "1", f"stats {stats}")
    expect(stats["inference_count"] == before["inference_count"] + 1, f"inference_count {before['inference_count']} -> {stats['inference_count']}")
    expect(stats["inference_stats"]["success"]["count"] == before["inference_stats"]["success"]["count"] + 1, "success count")
    every = client.get_inference_statistics()["model_stats"]
    expect({s["name"] for s in every} >= {"simple", "simple_string"}, f"all stats {[s['name'] for s in every]}")


@check
def unknown_model_and_wrong_shape_errors(url):
    # Triton answers NOT_FOUND with HTTP 404 (http_server.cc HttpCodeFromError), INVALID_ARG with 400.
    client = httpclient.InferenceServerClient(url)
    expect_error(lambda: client.infer("nosuch", simple_inputs()), "404", "Request for unknown model: 'nosuch' is not found")
    expect_error(lambda: client.get_model_metadata("nosuch"), "404", "Request for unknown model: 'nosuch' is not found")
    short = np.zeros((1, 15), dtype=np.int32)
    expect_error(lambda: client.infer("simple", simple_inputs(short, short)), "400",
                 "unexpected shape for input 'INPUT0' for model 'simple'. Expected [-1,16], got [1,15]")
    expect(client.is_model_ready("nosuch") is False, "is_model_ready of an unknown model")


@check
def trace_settings(url):
    client = httpclient.InferenceServerClient(url)
    settings = client.get_trace_settings()
    for key in ("trace_level", "trace_rate", "trace_count", "log_frequency"):
        expect(key in settings, f"{key} missing from {settings}")
    updated = client.update_trace_settings(model_name="simple", settings={"trace_rate": "7"})
    expect(updated["trace_rate"] == "7", f"model trace_rate {updated}")
    expect(client.get_trace_settings()["trace_rate"] == settings["trace_rate"], "global trace_rate changed")
    cleared = client.update_trace_settings(model_name="simple", settings={"trace_rate": None})
    expect(cleared["trace_rate"] == settings["trace_rate"], f"cleared model trace_rate {cleared}")


@check
def log_settings(url):
    client = httpclient.InferenceServerClient(url)
    settings = client.get_log_settings()
    for key in ("log_info", "log_warning", "log_error", "log_verbose_level", "log_format"):
        expect(key in settings, f"{key} missing from {settings}")
    updated = client.update_log_settings({"log_verbose_level": 1})
    expect(updated["log_verbose_level"] == 1, f"updated {updated}")
    client.update_log_settings({"log_verbose_level": settings["log_verbose_level"]})


@check
def shared_memory_status(url):
    client = httpclient.InferenceServerClient(url)
    client.unregister_system_shared_memory()
    expect(client.get_system_shared_memory_status() == [], "regions left registered")
    handle = shm.create_shared_memory_region("check_http_region", "/check_http_shm", 64)
    try:
        client.register_system_shared_memory("check_http_region", "/check_http_shm", 64, offset=0)
        status = client.get_system_shared_memory_status()
        expect([(r["name"], r["key"], int(r["byte_size"])) for r in status] == [("check_http_region", "/check_http_shm", 64)], f"status {status}")
        expect_error(lambda: client.register_system_shared_memory("check_http_region", "/check_http_shm", 64), "400",
                     "shared memory region 'check_http_region' already in manager")
        client.unregister_system_shared_memory("check_http_region")
        expect(client.get_system_shared_memory_status() == [], "region still registered")
    finally:
        client.unregister_system_shared_memory()
        shm.destroy_shared_memory_region(handle)
    expect(client.get_cuda_shared_memory_status() == [], "cuda shared-memory status")


@check
def unload_and_load(url):
    client = httpclient.InferenceServerClient(url)
    client.unload_model("simple_identity")
    expect(not client.is_model_ready("simple_identity"), "ready after unload")
    entry = next(m for m in client.get_model_repository_index() if m["name"] == "simple_identity")
    expect(entry["state"] == "UNAVAILABLE" and entry["reason"] == "unloaded", f"index entry {entry}")
    client.load_model("simple_identity")
    expect(client.is_model_ready("simple_identity"), "not ready after load")


def post_infer(url, body):
    """POST /v2/models/simple/infer with a JSON body, as L0_http's curl does: (status, body text)."""
    request = urllib.request.Request(f"http://{url}/v2/models/simple/infer", data=json.dumps(body).encode(), method="POST")
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, response.read().decode("latin-1")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("latin-1")


SUM = "[2,4,6,8,10,12,14,16,18,20,22,24,26,28,30,32]"
DIFF = "[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]"
ONES_TO_16 = list(range(1, 17))


def l0_http_input(name, data):
    return {"name": name, "datatype": "INT32", "shape": [1, 16], "data": data}


@check
def l0_http_binary_and_json_outputs(url):
    # Triton's qa/L0_http/test.sh: which outputs come back as JSON text for each combination.
    inputs = [l0_http_input("INPUT0", ONES_TO_16), l0_http_input("INPUT1", ONES_TO_16)]
    cases = [
        ({}, True, True),
        ({"outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}},
                      {"name": "OUTPUT1", "parameters": {"binary_data": False}}]}, False, True),
        ({"outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}, {"name": "OUTPUT1"}]}, False, True),
        ({"parameters": {"binary_data_output": True}}, False, False),
        ({"parameters": {"binary_data_output": True},
          "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": False}}, {"name": "OUTPUT1"}]}, True, True),
    ]
    for extra, sum_as_json, diff_as_json in cases:
        status, text = post_infer(url, {"inputs": inputs, **extra})
        expect(status == 200, f"{extra}: status {status} {text}")
        expect((SUM in text) == sum_as_json and (DIFF in text) == diff_as_json, f"{extra}: body {text!r}")


@check
def l0_http_data_not_matching_the_shape(url):
    for n in (15, 18):
        status, text = post_infer(url, {"inputs": [l0_http_input("INPUT0", list(range(1, n + 1)))]})
        expect(status == 400, f"{n} values: status {status}")
        error = json.loads(text)["error"]
        expect(error.startswith("Unable to parse 'data': Shape does not match true shape of 'data' field"), f"{n} values: {error!r}")
    status, text = post_infer(url, {"inputs": [l0_http_input("INPUT0", ONES_TO_16), l0_http_input("INPUT1", ONES_TO_16)]})
    expect(status == 200 and SUM in text and DIFF in text, f"after the bad requests: {status} {text}")


@check
async def aio_management_calls(url):
    await checks.aio_management_calls(aiohttpclient.InferenceServerClient, url)


@check
async def aio_client(url):
    async with aiohttpclient.InferenceServerClient(url) as client:
        expect(await client.is_server_live() and await client.is_server_ready(), "live/ready")
        expect((await client.get_model_metadata("simple"))["name"] == "simple", "metadata")
        inputs = [aiohttpclient.InferInput("INPUT0", [1, 16], "INT32"), aiohttpclient.InferInput("INPUT1", [1, 16], "INT32")]
        inputs[0].set_data_from_numpy(A)
        inputs[1].set_data_from_numpy(B)
        result = await client.infer("simple", inputs)
        expect((result.as_numpy("OUTPUT0") == A + B).all(), "aio OUTPUT0")
        await expect_error_async(client.infer("nosuch", inputs), "404", "Request for unknown model: 'nosuch' is not found")


if __name__ == "__main__":
    main()
