# schemathesis hooks for tests/it/openapi.rs: remote-write bodies (`application/x-protobuf`, a binary
# string in the document) are sent as the raw bytes generated for them.
import schemathesis

schemathesis.serializer.alias("application/x-protobuf", "application/octet-stream")
