//! Iterating on the NAB figures without building the whole binary:
//! `cargo run --release -p argus-analyzer --example nab -- DIR [PARAMS_JSON]`.

use std::path::PathBuf;

use argus_analyzer::detect::univariate::{Univariate, UnivariateParams};
use argus_analyzer::eval::nab::{corpus::Corpus, evaluate, reference, stream};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(std::env::args().nth(1).ok_or("usage: nab DIR [PARAMS_JSON]")?);
    let params: UnivariateParams = match std::env::args().nth(2) {
        Some(json) => serde_json::from_str(&json)?,
        None => UnivariateParams::default(),
    };
    let corpus = Corpus::load(&root)?;
    if std::env::var_os("NAB_CHECK").is_some() {
        for c in reference::check(&root, &corpus, "windowedGaussian")? {
            println!("{c:?}");
        }
    }
    if let Ok(name) = std::env::var("NAB_FILE") {
        use argus_analyzer::detect::StreamDetector;
        let f = corpus.files.iter().find(|f| f.path.contains(&name)).ok_or("no such file")?;
        let mut d = Univariate::new(params.clone());
        for (i, (&t, &v)) in f.timestamps.iter().zip(&f.values).enumerate() {
            let verdict = d.update(t, v);
            if i % 97 == 0 || verdict.score > 2.0 {
                println!("{i} {v} {verdict:?}");
            }
        }
        return Ok(());
    }
    if let Ok(name) = std::env::var("NAB_SEASON") {
        use augurs_seasons::{Detector, PeriodogramDetector};
        let f = corpus.files.iter().find(|f| f.path.contains(&name)).ok_or("no such file")?;
        for n in [400usize, 600, 1000] {
            let d = PeriodogramDetector::builder().min_period(4).max_period((n / 2) as u32).build();
            let pg = d.periodogram(&f.values[..n]);
            println!("{n}: {:?}", d.detect(&f.values[..n]));
            let mut top: Vec<_> = pg.periods.iter().zip(&pg.powers).collect();
            top.sort_by(|a, b| b.1.total_cmp(a.1));
            println!("   {:?}", &top[..top.len().min(6)]);
        }
        return Ok(());
    }
    if std::env::var_os("NAB_PERIODS").is_some() {
        use argus_analyzer::detect::{StreamDetector, threshold::Threshold};
        for f in &corpus.files {
            let mut d = Threshold::new(params.threshold.clone());
            let mut max = (0.0f64, 0usize);
            for (i, (&t, &v)) in f.timestamps.iter().zip(&f.values).enumerate() {
                let s = d.update(t, v).score;
                if i > 750 && s > max.0 {
                    max = (s, i);
                }
            }
            println!("{:60} period {:?} max {:.1} at {}", f.path, d.period(), max.0, max.1);
        }
        return Ok(());
    }
    if let Ok(dir) = std::env::var("NAB_DUMP") {
        // One `score` line per point of every file, under DIR with the file's path: for analysis elsewhere.
        for f in &corpus.files {
            let out = PathBuf::from(&dir).join(&f.path);
            std::fs::create_dir_all(out.parent().ok_or("path")?)?;
            let lines: Vec<String> =
                stream(f, &mut Univariate::new(params.clone())).iter().map(f64::to_string).collect();
            std::fs::write(out, lines.join("\n"))?;
        }
    }
    let report = evaluate(&corpus, || Univariate::new(params.clone()))?;
    if std::env::var_os("NAB_PERFILE").is_some() {
        use argus_analyzer::eval::nab::{gather, sweep};
        let p = &corpus.profiles[0];
        let t = report.profiles[0].threshold_whole;
        for f in &corpus.files {
            let s = stream(f, &mut Univariate::new(params.clone()));
            let g = gather([(f, s.as_slice())]).map_err(|e| format!("{e:?}"))?;
            let (raw, c) = sweep::score_at(&g.points, g.windows, t, p);
            println!("{:60} {:7.2} windows {} tp {} fp {}", f.path, raw, g.windows, c.tp, c.fp);
        }
    }
    println!("detect {:.2}s", report.detect_seconds);
    for p in &report.profiles {
        println!(
            "{:20} split {:6.2} (A {:6.2} B {:6.2})  whole {:6.2}  thr {:.3} / {:.3} / {:.3}",
            p.profile, p.split, p.half_a, p.half_b, p.whole, p.threshold_whole, p.threshold_from_a, p.threshold_from_b
        );
    }
    Ok(())
}
