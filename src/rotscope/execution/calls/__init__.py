"""The call path: executing work items (``execute``), their order (``order``), rate limits
(``limits``), cost and budget (``cost``), the response cache (``response_cache``), the delivery check
(``delivery``) and cache controls (``cachecheck``). The bottom room of ``rotscope.execution``."""
