"""Which proxy a served model's requests go through: the one the environment sets for the URL's
scheme (``HTTP_PROXY``, ``HTTPS_PROXY``, else ``ALL_PROXY``; lower case first, as curl reads
them), unless ``NO_PROXY`` names the host (``localhost``, ``127.0.0.1``, a domain suffix, ``*``).
timefoil decides it once and hands httpx that proxy alone, so the proxy a failed connection names
is the one that was used."""
from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import urlsplit

from ...core.redaction import public_url


@dataclass(frozen=True)
class Proxy:
    url: str  # as set, key and all: used for the connection only
    variable: str  # the environment variable that set it

    def said(self) -> str:
        """The proxy as a message names it: without its userinfo and query."""
        return f"the proxy {public_url(self.url)} ({self.variable})"


def proxy_for(url: str) -> Proxy | None:
    """The proxy requests to ``url`` go through, or None (none set, or ``NO_PROXY`` names its host)."""
    from urllib.request import proxy_bypass_environment

    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    for name in (f"{scheme}_proxy", "all_proxy"):
        for variable in (name, name.upper()):
            value = os.environ.get(variable, "").strip()
            if value:
                host = parts.hostname or ""
                if parts.port is not None:
                    host = f"{host}:{parts.port}"
                return None if _bypassed(host, proxy_bypass_environment) else Proxy(value, variable)
    return None


def _bypassed(host: str, bypass) -> bool:
    """Whether ``NO_PROXY`` (or ``no_proxy``) names ``host`` (with or without its port)."""
    listed = os.environ.get("no_proxy") or os.environ.get("NO_PROXY") or ""
    if not listed.strip():
        return False
    return bool(bypass(host, {"no": listed}))


def client_options(url: str) -> dict:
    """httpx client options: the proxy decided here and no other (``trust_env`` off), with the
    certificate settings the environment gives (``SSL_CERT_FILE``, ``SSL_CERT_DIR``) kept."""
    import httpx

    proxy = proxy_for(url)
    verify = httpx.create_ssl_context(trust_env=True) if urlsplit(url).scheme == "https" else True
    return {"proxy": proxy.url if proxy else None, "trust_env": False, "verify": verify}
