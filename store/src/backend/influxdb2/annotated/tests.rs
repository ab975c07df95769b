use super::*;
use expect_test::{Expect, expect};

/// Renders series one per line: `name{labels} t=v t=v`.
fn check(csv: &str, want: Expect) {
    let got = match parse(csv) {
        Ok(series) => series
            .iter()
            .map(|s| {
                let pts: Vec<String> = s.samples.iter().map(|x| format!("{}={}", x.t, x.v)).collect();
                format!("{} {}", s.labels, pts.join(" "))
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Err(e) => format!("error: {e}"),
    };
    want.assert_eq(&got);
}

// The first three cases are the examples of InfluxDB's "Annotated CSV" reference,
// https://docs.influxdata.com/influxdb/v2/reference/syntax/annotated-csv/ (source:
// github.com/influxdata/docs-v2, content/shared/influxdb-v2/reference/syntax/annotated-csv/_index.md),
// copied as they stand there.

#[test]
fn docs_example_tables() {
    check(
        "#group,false,false,true,true,false,false,true,true,true,true
#datatype,string,long,dateTime:RFC3339,dateTime:RFC3339,dateTime:RFC3339,double,string,string,string,string
#default,mean,,,,,,,,,
,result,table,_start,_stop,_time,_value,_field,_measurement,host,region
,,0,2022-12-31T05:41:24Z,2023-01-31T05:41:24.001Z,2023-01-01T00:52:00Z,15.43,mem,m,A,east
,,1,2022-12-31T05:41:24Z,2023-01-31T05:41:24.001Z,2023-01-01T00:52:00Z,59.25,mem,m,B,east
,,2,2022-12-31T05:41:24Z,2023-01-31T05:41:24.001Z,2023-01-01T00:52:00Z,52.62,mem,m,C,east
",
        expect![[r#"
            m_mem{host="A", region="east"} 1672534320000=15.43
            m_mem{host="B", region="east"} 1672534320000=59.25
            m_mem{host="C", region="east"} 1672534320000=52.62"#]],
    );
}

/// Two tables of different schemas, separated by an empty row; the second holds strings (events).
#[test]
fn docs_example_multiple_tables_and_results() {
    check(
        "#group,false,false,true,true,false,false,true,true,true,true
#datatype,string,long,dateTime:RFC3339,dateTime:RFC3339,dateTime:RFC3339,double,string,string,string,string
#default,_result,,,,,,,,,
,result,table,_start,_stop,_time,_value,_field,_measurement,host,region
,,0,2022-12-31T05:41:24Z,2023-01-31T05:41:24.001Z,2023-01-01T00:00:00Z,15.43,mem,m,A,east
,,1,2022-12-31T05:41:24Z,2023-01-31T05:41:24.001Z,2023-01-01T00:00:00Z,59.25,mem,m,B,east
,,2,2022-12-31T05:41:24Z,2023-01-31T05:41:24.001Z,2023-01-01T00:00:00Z,52.62,mem,m,C,east

#group,false,false,true,true,true,true,false,false,true,true
#datatype,string,long,string,string,dateTime:RFC3339,dateTime:RFC3339,dateTime:RFC3339,string,string,string
#default,_result,,,,,,,,,
,result,table,_field,_measurement,_start,_stop,_time,_value,host,region
,,3,mem_level,m,2022-12-31T05:41:24Z,2023-01-31T05:41:24.001Z,2023-01-01T00:00:00Z,ok,A,east
,,4,mem_level,m,2022-12-31T05:41:24Z,2023-01-31T05:41:24.001Z,2023-01-01T00:00:00Z,info,B,east
,,5,mem_level,m,2022-12-31T05:41:24Z,2023-01-31T05:41:24.001Z,2023-01-01T00:00:00Z,info,C,east
",
        expect![[r#"
            m_mem{host="A", region="east"} 1672531200000=15.43
            m_mem{host="B", region="east"} 1672531200000=59.25
            m_mem{host="C", region="east"} 1672531200000=52.62"#]],
    );
}

#[test]
fn docs_example_error() {
    check(
        "#datatype,string,long
,error,reference
,Failed to parse query,897
",
        expect!["error: influxdb: Failed to parse query (reference 897)"],
    );
}

// The rest are replies shaped like InfluxDB 2's to our own queries (`drop` leaves no _start/_stop).

#[test]
fn types_defaults_and_duplicate_times() {
    check(
        "#datatype,string,long,dateTime:RFC3339Nano,long,string,string,string
#group,false,false,false,false,true,true,true
#default,_result,,,,,,
,result,table,_time,_value,_field,_measurement,gpu
,,0,2024-01-01T00:00:00.000000001Z,7,mem_mib,gpu,0
,,0,2024-01-01T00:00:00.000999Z,8,mem_mib,gpu,0
,,0,2024-01-01T00:00:10Z,-9,mem_mib,gpu,0

#datatype,string,long,dateTime:RFC3339,boolean,string,string,string
#group,false,false,false,false,true,true,true
#default,_result,,,,,,
,result,table,_time,_value,_field,_measurement,gpu
,,1,2024-01-01T00:00:00Z,true,throttled,gpu,0
,,1,2024-01-01T00:00:10Z,false,throttled,gpu,0

#datatype,string,long,dateTime:RFC3339,double,string,string,string
#group,false,false,false,false,true,true,true
#default,_result,,,,,,
,result,table,_time,_value,_field,_measurement,gpu
,,2,2024-01-01T00:00:00Z,+Inf,util,gpu,
,,2,2024-01-01T00:00:10Z,,util,gpu,
,,2,2024-01-01T00:00:20Z,-0.5,util,gpu,
",
        expect![[r#"
            gpu_mem_mib{gpu="0"} 1704067200000=8 1704067210000=-9
            gpu_throttled{gpu="0"} 1704067200000=1 1704067210000=0
            gpu_util{} 1704067200000=inf 1704067220000=-0.5"#]],
    );
}

#[test]
fn quoted_cells_keep_commas_and_quotes() {
    check(
        "#datatype,string,long,dateTime:RFC3339,double,string,string,string
#group,false,false,false,false,true,true,true
#default,_result,,,,,,
,result,table,_time,_value,_field,_measurement,path
,,0,2024-01-01T00:00:00Z,1.5,used,fs,\"/a,b \"\"c\"\"\"
",
        expect![[r#"fs_used{path="/a,b \"c\""} 1704067200000=1.5"#]],
    );
}

#[test]
fn bad_replies_name_the_line() {
    check("", expect![""]);
    check(
        "#datatype,string,long,dateTime:RFC3339,double
,result,table,_time,_value
,,0,yesterday,1
",
        expect![[r#"error: line 3: _time "yesterday" is not an RFC 3339 time"#]],
    );
    check(
        "#datatype,string,long,dateTime:RFC3339,double
,result,table,_time,_value
,,0,2024-01-01T00:00:00Z,lots
",
        expect![[r#"error: line 3: _value "lots" is not a double"#]],
    );
    check(
        "#datatype,string,long
,result,table
,,0
",
        expect!["error: line 2: a table without _time and _value columns: result,table"],
    );
}
