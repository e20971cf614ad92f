"""The API's endpoints, one router a resource; `api.app` includes them all."""
