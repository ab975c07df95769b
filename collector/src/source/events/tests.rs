use super::*;
use crate::source::golden;

#[test]
fn lines_are_classified_first_kind_first() {
    let train = std::fs::read_to_string(golden::fixture("logs/train.log")).unwrap();
    let kern = std::fs::read_to_string(golden::fixture("logs/kern.log")).unwrap();
    let got: Vec<String> = train
        .lines()
        .chain(kern.lines())
        .map(|l| format!("{:<12} {}", classify(l).unwrap_or("-"), &l[..l.len().min(60)]))
        .collect();
    expect_test::expect![[r#"
        -            {'loss': 1.8213, 'grad_norm': 0.912, 'learning_rate': 2.9e-0
        -            [rank3]: Traceback (most recent call last):
        -            [rank3]:   File "/workspace/train.py", line 212, in <module>
        -            [rank3]:     loss.backward()
        -            [rank3]:   File "/usr/local/lib/python3.10/dist-packages/tor
        -            [rank3]:     torch.autograd.backward(
        cuda_oom     [rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried t
        -            node-7:88210:88301 [0] NCCL INFO Channel 00/32 : 0 1 2 3 4 5
        -            node-7:88210:88301 [0] NCCL INFO Connected all rings
        nccl_error   node-7:88212:88399 [2] transport/net_ib.cc:1696 NCCL WARN NE
        nccl_timeout [rank2]:[E1130 02:11:58.123456789 ProcessGroupNCCL.cpp:616] 
        cuda_error   RuntimeError: CUDA error: an illegal memory access was encou
        nccl_error   torch.distributed.DistBackendError: NCCL error in: ../torch/
        -            {'loss': 1.8011, 'grad_norm': 0.887, 'learning_rate': 2.8e-0
        link_down    Nov 30 02:10:01 node-7 kernel: [ 9021.112233] mlx5_core 0000
        -            Nov 30 02:10:03 node-7 kernel: [ 9023.004455] mlx5_core 0000
        link_down    Nov 30 02:10:07 node-7 kernel: [ 9027.552211] ice 0000:31:00
        ecc          Nov 30 02:11:40 node-7 kernel: [ 9120.778899] EDAC MC1: 1 CE
        -            Nov 30 02:12:05 node-7 kernel: [ 9145.000111] NVRM: Xid (PCI
        -            Nov 30 02:12:09 node-7 kernel: [ 9149.123000] systemd[1]: St
    "#]]
    .assert_eq(&(got.join("\n") + "\n"));
}

#[test]
fn golden_events_from_logs_written_after_start() {
    let dir = tempfile::tempdir().unwrap();
    let train = dir.path().join("train.log");
    let kern = dir.path().join("kern.log");
    std::fs::write(&train, "history that is not counted: CUDA out of memory\n").unwrap();
    let settings = EventsSettings { files: vec![train.clone(), kern.clone()], kernel_log: None };
    let mut e = Events::new(&settings);
    let mut first = Batch::new();
    e.collect(1_000, &mut first).unwrap();
    assert!(first.to_exposition().lines().all(|l| l.ends_with(" 0")), "all kinds start at zero");

    let append = |path: &std::path::Path, fixture: &str| {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
        f.write_all(std::fs::read_to_string(golden::fixture(fixture)).unwrap().as_bytes()).unwrap();
    };
    append(&train, "logs/train.log");
    // kern.log did not exist at start: read from its beginning once it appears.
    append(&kern, "logs/kern.log");
    let mut b = Batch::new();
    e.collect(2_000, &mut b).unwrap();
    let text = b.to_exposition().replace(&dir.path().display().to_string(), "$DIR");
    golden::check_text("events", "txt", &text);
}
