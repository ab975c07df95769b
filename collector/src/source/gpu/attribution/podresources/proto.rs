//! The kubelet's PodResources API v1 messages (package `v1`), written by hand with prost because the
//! build has no `protoc` and a pure-Rust proto compiler is a large build dependency for three calls.
//!
//! Every message, field number and type mirrors collector/proto/podresources/v1/api.proto (kubelet
//! v0.36.3; see collector/proto/README.md). They are the wire contract: never renumber them. The test
//! below pins the tags by decoding bytes built field by field.

/// The gRPC service and the paths of its methods (`/<package>.<service>/<method>`).
pub const SERVICE: &str = "v1.PodResourcesLister";
pub const LIST: &str = "/v1.PodResourcesLister/List";
pub const GET_ALLOCATABLE_RESOURCES: &str = "/v1.PodResourcesLister/GetAllocatableResources";
pub const GET: &str = "/v1.PodResourcesLister/Get";

#[derive(Clone, PartialEq, prost::Message)]
pub struct AllocatableResourcesRequest {}

/// Every device, CPU and memory block the kubelet can hand out, allocated or not.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AllocatableResourcesResponse {
    #[prost(message, repeated, tag = "1")]
    pub devices: Vec<ContainerDevices>,
    #[prost(int64, repeated, tag = "2")]
    pub cpu_ids: Vec<i64>,
    #[prost(message, repeated, tag = "3")]
    pub memory: Vec<ContainerMemory>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ListPodResourcesRequest {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ListPodResourcesResponse {
    #[prost(message, repeated, tag = "1")]
    pub pod_resources: Vec<PodResources>,
}

/// The resources assigned to one pod.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PodResources {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub namespace: String,
    #[prost(message, repeated, tag = "3")]
    pub containers: Vec<ContainerResources>,
}

/// The resources assigned to one container.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ContainerResources {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, repeated, tag = "2")]
    pub devices: Vec<ContainerDevices>,
    #[prost(int64, repeated, tag = "3")]
    pub cpu_ids: Vec<i64>,
    #[prost(message, repeated, tag = "4")]
    pub memory: Vec<ContainerMemory>,
    #[prost(message, repeated, tag = "5")]
    pub dynamic_resources: Vec<DynamicResource>,
}

/// Memory and hugepages assigned to a container.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ContainerMemory {
    #[prost(string, tag = "1")]
    pub memory_type: String,
    #[prost(uint64, tag = "2")]
    pub size: u64,
    #[prost(message, optional, tag = "3")]
    pub topology: Option<TopologyInfo>,
}

/// Devices of one resource (`nvidia.com/gpu`, `nvidia.com/mig-1g.10gb`) assigned to a container, or
/// allocatable on the node. A device plugin chooses the ids: NVIDIA's are GPU or MIG UUIDs.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ContainerDevices {
    #[prost(string, tag = "1")]
    pub resource_name: String,
    #[prost(string, repeated, tag = "2")]
    pub device_ids: Vec<String>,
    #[prost(message, optional, tag = "3")]
    pub topology: Option<TopologyInfo>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TopologyInfo {
    #[prost(message, repeated, tag = "1")]
    pub nodes: Vec<NumaNode>,
}

/// `NUMANode`; its field is `ID` in the proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NumaNode {
    #[prost(int64, tag = "1")]
    pub id: i64,
}

/// Devices assigned to a container by dynamic resource allocation. Tag 1 (`class_name`) was removed
/// upstream in Kubernetes 1.31.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DynamicResource {
    #[prost(string, tag = "2")]
    pub claim_name: String,
    #[prost(string, tag = "3")]
    pub claim_namespace: String,
    #[prost(message, repeated, tag = "4")]
    pub claim_resources: Vec<ClaimResource>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ClaimResource {
    #[prost(message, repeated, tag = "1")]
    pub cdi_devices: Vec<CdiDevice>,
    #[prost(string, tag = "2")]
    pub driver_name: String,
    #[prost(string, tag = "3")]
    pub pool_name: String,
    #[prost(string, tag = "4")]
    pub device_name: String,
    #[prost(string, optional, tag = "5")]
    pub share_id: Option<String>,
}

/// `CDIDevice`: a fully qualified CDI device name, e.g. `vendor.com/gpu=gpudevice1`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CdiDevice {
    #[prost(string, tag = "1")]
    pub name: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetPodResourcesRequest {
    #[prost(string, tag = "1")]
    pub pod_name: String,
    #[prost(string, tag = "2")]
    pub pod_namespace: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetPodResourcesResponse {
    #[prost(message, optional, tag = "1")]
    pub pod_resources: Option<PodResources>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    // Protobuf's wire format, written out by hand so the test does not trust prost's derive.
    fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn key(tag: u32, wire_type: u8) -> Vec<u8> {
        let mut out = Vec::new();
        varint(u64::from(tag) << 3 | u64::from(wire_type), &mut out);
        out
    }

    /// Wire type 2: strings, bytes, messages and packed repeated scalars.
    fn len(tag: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = key(tag, 2);
        varint(payload.len() as u64, &mut out);
        out.extend_from_slice(payload);
        out
    }

    /// Wire type 0.
    fn int(tag: u32, v: u64) -> Vec<u8> {
        let mut out = key(tag, 0);
        varint(v, &mut out);
        out
    }

    fn packed(tag: u32, values: &[i64]) -> Vec<u8> {
        let mut payload = Vec::new();
        for v in values {
            varint(*v as u64, &mut payload);
        }
        len(tag, &payload)
    }

    fn cat(parts: &[Vec<u8>]) -> Vec<u8> {
        parts.concat()
    }

    /// A `NUMANode` message's bytes.
    fn numa(id: i64) -> Vec<u8> {
        int(1, id as u64)
    }

    #[test]
    fn list_response_decodes_from_bytes_built_field_by_field_and_encodes_back() {
        // Non-zero ids: proto3 leaves a field at its default (0) off the wire.
        let topology = cat(&[len(1, &numa(1)), len(1, &numa(3))]);
        let gpus = cat(&[
            len(1, b"nvidia.com/gpu"),
            len(2, b"GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10"),
            len(2, b"GPU-0c9f2b7e-3d41-4a8b-9e6f-7a1b2c3d4e5f"),
            len(3, &topology),
        ]);
        let memory = cat(&[len(1, b"hugepages-1Gi"), int(2, 2 << 30), len(3, &len(1, &numa(1)))]);
        let claim = cat(&[
            len(1, &len(1, b"nvidia.com/gpu=gpu-0")),
            len(2, b"gpu.nvidia.com"),
            len(3, b"node-7"),
            len(4, b"gpu-0"),
            len(5, b"share-1"),
        ]);
        let dynamic = cat(&[len(2, b"claim-a"), len(3, b"ml"), len(4, &claim)]);
        let container =
            cat(&[len(1, b"trainer"), len(2, &gpus), packed(3, &[2, 3, 66]), len(4, &memory), len(5, &dynamic)]);
        let pod = cat(&[len(1, b"llama-0"), len(2, b"ml"), len(3, &container)]);
        let bytes = len(1, &pod);

        let decoded = ListPodResourcesResponse::decode(bytes.as_slice()).unwrap();
        let expected = ListPodResourcesResponse {
            pod_resources: vec![PodResources {
                name: "llama-0".into(),
                namespace: "ml".into(),
                containers: vec![ContainerResources {
                    name: "trainer".into(),
                    devices: vec![ContainerDevices {
                        resource_name: "nvidia.com/gpu".into(),
                        device_ids: vec![
                            "GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10".into(),
                            "GPU-0c9f2b7e-3d41-4a8b-9e6f-7a1b2c3d4e5f".into(),
                        ],
                        topology: Some(TopologyInfo { nodes: vec![NumaNode { id: 1 }, NumaNode { id: 3 }] }),
                    }],
                    cpu_ids: vec![2, 3, 66],
                    memory: vec![ContainerMemory {
                        memory_type: "hugepages-1Gi".into(),
                        size: 2 << 30,
                        topology: Some(TopologyInfo { nodes: vec![NumaNode { id: 1 }] }),
                    }],
                    dynamic_resources: vec![DynamicResource {
                        claim_name: "claim-a".into(),
                        claim_namespace: "ml".into(),
                        claim_resources: vec![ClaimResource {
                            cdi_devices: vec![CdiDevice { name: "nvidia.com/gpu=gpu-0".into() }],
                            driver_name: "gpu.nvidia.com".into(),
                            pool_name: "node-7".into(),
                            device_name: "gpu-0".into(),
                            share_id: Some("share-1".into()),
                        }],
                    }],
                }],
            }],
        };
        assert_eq!(decoded, expected);
        // Fields in tag order, repeated scalars packed: prost writes exactly these bytes.
        assert_eq!(expected.encode_to_vec(), bytes);
    }

    #[test]
    fn allocatable_and_get_messages_keep_their_tags() {
        let devices = cat(&[len(1, b"nvidia.com/mig-1g.10gb"), len(2, b"MIG-2f6c1c8e-0a3b-5d7e-9c1f-4b2a6d8e0f13")]);
        let memory = cat(&[len(1, b"memory"), int(2, 1 << 34)]);
        let bytes = cat(&[len(1, &devices), packed(2, &[0, 1]), len(3, &memory)]);
        let expected = AllocatableResourcesResponse {
            devices: vec![ContainerDevices {
                resource_name: "nvidia.com/mig-1g.10gb".into(),
                device_ids: vec!["MIG-2f6c1c8e-0a3b-5d7e-9c1f-4b2a6d8e0f13".into()],
                topology: None,
            }],
            cpu_ids: vec![0, 1],
            memory: vec![ContainerMemory { memory_type: "memory".into(), size: 1 << 34, topology: None }],
        };
        assert_eq!(AllocatableResourcesResponse::decode(bytes.as_slice()).unwrap(), expected);
        assert_eq!(expected.encode_to_vec(), bytes);

        let request = cat(&[len(1, b"llama-0"), len(2, b"ml")]);
        let get = GetPodResourcesRequest { pod_name: "llama-0".into(), pod_namespace: "ml".into() };
        assert_eq!(get.encode_to_vec(), request);
        let response = len(1, &cat(&[len(1, b"llama-0"), len(2, b"ml")]));
        let decoded = GetPodResourcesResponse::decode(response.as_slice()).unwrap();
        assert_eq!(decoded.pod_resources.map(|p| (p.name, p.namespace)), Some(("llama-0".into(), "ml".into())));
        assert!(ListPodResourcesRequest {}.encode_to_vec().is_empty());
        assert!(AllocatableResourcesRequest {}.encode_to_vec().is_empty());
    }
}
