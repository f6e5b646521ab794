"""One place that maps domain errors to HTTP answers: JSON for the API, a page otherwise."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.shortcuts import render

from analytics.spark import SparkUnavailable
from broker.connect.policy import ConnectPolicyRefused
from broker.errors import (
    AlreadyExists,
    ClusterAuthFailed,
    ClusterUnavailable,
    ConfigError,
    InvalidInput,
    KafkaRefused,
    KazamiError,
    NotFound,
    NotSupported,
    PartitionUnavailable,
    UnknownCluster,
)
from broker.groups.changes import GroupActive
from console.access import Forbidden, ReadOnlyCluster, wants_json
from console.params import BodyTooLarge, too_large_message

log = logging.getLogger(__name__)

# The most specific class wins; KazamiError is a plain bad request.
STATUS: list[tuple[type[KazamiError], int, str]] = [
    (Forbidden, 403, "forbidden"),
    (ReadOnlyCluster, 403, "read_only"),
    (ConnectPolicyRefused, 403, "connect_policy"),
    (UnknownCluster, 404, "unknown_cluster"),
    (NotFound, 404, "not_found"),
    (BodyTooLarge, 413, "too_large"),
    (AlreadyExists, 409, "already_exists"),
    (NotSupported, 409, "not_supported"),
    (GroupActive, 409, "group_active"),
    (InvalidInput, 400, "invalid_input"),
    (KafkaRefused, 422, "kafka_refused"),
    (PartitionUnavailable, 503, "partition_unavailable"),
    (ClusterAuthFailed, 503, "cluster_auth_failed"),
    (ClusterUnavailable, 503, "cluster_unavailable"),
    (SparkUnavailable, 503, "spark_unavailable"),
    (ConfigError, 500, "configuration_error"),
    (KazamiError, 400, "bad_request"),
]


def status_of(exc: KazamiError) -> tuple[int, str]:
    for cls, status, code in STATUS:
        if isinstance(exc, cls):
            return status, code
    return 400, "bad_request"


def json_error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": code, "message": message}, status=status)


def _hostile(exc: Exception) -> KazamiError | None:
    """A request the console cannot take that surfaced as a plain Python error: a body over
    DATA_UPLOAD_MAX_MEMORY_SIZE read through request.POST, or input nested deep enough to exhaust the stack."""
    if isinstance(exc, RequestDataTooBig):
        return BodyTooLarge(too_large_message())
    if isinstance(exc, RecursionError):
        return BodyTooLarge("The request is nested too deeply to be read.")
    return None


def api_view(view: Callable[..., Any]) -> Callable[..., HttpResponse]:
    """An API view returns a JSON-able value; errors become {"error", "message"} with their status."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            try:
                result = view(request, *args, **kwargs)
            except (RequestDataTooBig, RecursionError) as exc:
                raise _hostile(exc) or exc from None
        except KazamiError as exc:
            status, code = status_of(exc)
            response = json_error(status, code, str(exc))
            fields = getattr(exc, "fields", None)
            if fields:
                response = JsonResponse({"error": code, "message": str(exc), "fields": fields}, status=status)
            return response
        except Exception:
            log.exception("API view %s failed", view.__name__)
            return json_error(500, "internal_error", "The console failed to answer; the error is in its log.")
        if isinstance(result, HttpResponseBase):  # a streamed one too
            return result  # type: ignore[return-value]
        return JsonResponse(result, safe=False, json_dumps_params={"indent": 2})

    return wrapper


def page_view(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A page view; a domain error renders the error page with its status, never Django's."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            try:
                return view(request, *args, **kwargs)
            except (RequestDataTooBig, RecursionError) as exc:
                raise _hostile(exc) or exc from None
        except KazamiError as exc:
            status, _ = status_of(exc)
            return render(request, "errors/error.html", {"status": status, "message": str(exc)}, status=status)

    return wrapper


def handler404(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    message = f"Nothing at {request.path}."
    if wants_json(request):
        return json_error(404, "not_found", message)
    return render(request, "errors/error.html", {"status": 404, "message": message}, status=404)


def handler500(request: HttpRequest) -> HttpResponse:
    message = "The console failed to answer this request; the error is in its log."
    if wants_json(request):
        return json_error(500, "internal_error", message)
    return render(request, "errors/error.html", {"status": 500, "message": message}, status=500)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """A POST without a valid CSRF token (a form from another site, or a script without the header)."""
    message = "The request was refused: its CSRF token is missing or wrong. Reload the page and try again."
    if wants_json(request):
        return json_error(403, "csrf_failed", message + " API clients send the csrftoken cookie as X-CSRFToken.")
    return render(request, "errors/error.html", {"status": 403, "message": message}, status=403)


def handler400(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if wants_json(request):
        return json_error(400, "bad_request", "Bad request.")
    return render(request, "errors/error.html", {"status": 400, "message": "Bad request."}, status=400)


class StaticFiles(ASGIStaticFilesHandler):
    """The console's static files over ASGI. A path that leaves the static folders (``/static/../``, however
    encoded) or that no file system can hold (a NUL byte) is a miss like any other: 404, never an error."""

    def serve(self, request: HttpRequest) -> FileResponse:
        try:
            return super().serve(request)
        except (SuspiciousOperation, ValueError, OSError):
            raise Http404("No such static file.") from None
