//! The binary protocol's encodings: length-encoded fields, OK and error packets,
//! parameters and rows.

use super::wire::{Result, WireError};
use crate::targets::sql::{Arg, Val};
use mysql_common::constants::ColumnType;

/// A packet's payload can be at most this long; longer ones continue in the next frame.
pub const MAX_PAYLOAD: usize = 0xff_ffff;

pub fn protocol<T>(what: &str) -> Result<T> {
    Err(WireError::Protocol(what.to_string()))
}

/// A column's binary encoding, from its definition.
#[derive(Clone, Copy, Debug)]
pub struct Col {
    pub ty: ColumnType,
    pub unsigned: bool,
}

/// Reads the protocol's little-endian and length-encoded fields off a packet.
pub struct Cursor<'a>(pub &'a [u8]);

impl<'a> Cursor<'a> {
    pub fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.0.len() < n {
            return protocol("packet ended early");
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    pub fn le<const N: usize>(&mut self) -> Result<[u8; N]> {
        Ok(self.take(N)?.try_into().expect("took N bytes"))
    }
    pub fn lenenc(&mut self) -> Result<u64> {
        Ok(match self.u8()? {
            n @ 0..=0xfa => n as u64,
            0xfc => u16::from_le_bytes(self.le()?) as u64,
            0xfd => {
                let b = self.take(3)?;
                u32::from_le_bytes([b[0], b[1], b[2], 0]) as u64
            }
            0xfe => u64::from_le_bytes(self.le()?),
            _ => return protocol("bad length-encoded integer"),
        })
    }
    pub fn lenenc_bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.lenenc()? as usize;
        self.take(n)
    }
}

pub fn put_lenenc(out: &mut Vec<u8>, n: u64) {
    match n {
        0..=0xfa => out.push(n as u8),
        0xfb..=0xffff => {
            out.push(0xfc);
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        0x1_0000..=0xff_ffff => {
            out.push(0xfd);
            out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xfe);
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
}

/// An OK packet's affected rows and status flags.
pub fn ok(p: &[u8]) -> Result<(u64, u16)> {
    let mut c = Cursor(&p[1..]);
    let affected = c.lenenc()?;
    c.lenenc()?; // last insert id
    Ok((affected, u16::from_le_bytes(c.le()?)))
}

pub fn server_error(p: &[u8]) -> WireError {
    let mut c = Cursor(&p[1..]);
    let Ok(code) = c.le::<2>().map(u16::from_le_bytes) else {
        return WireError::Protocol("short error packet".into());
    };
    let state = match c.0 {
        [b'#', s @ ..] if s.len() >= 5 => {
            let state = String::from_utf8_lossy(&s[..5]).into_owned();
            c.0 = &s[5..];
            state
        }
        _ => "HY000".to_string(),
    };
    WireError::Server { code, state, message: String::from_utf8_lossy(c.0).into_owned() }
}

/// The end of a result set: an OK packet with a 0xFE header (rows never start so on the
/// binary protocol; on the text protocol a row that long would exceed a packet).
pub fn is_end(p: &[u8]) -> bool {
    p.first() == Some(&0xfe) && p.len() < MAX_PAYLOAD
}

pub fn arg_type(a: &Arg) -> ColumnType {
    match a {
        Arg::Int(_) => ColumnType::MYSQL_TYPE_LONGLONG,
        Arg::Real(_) => ColumnType::MYSQL_TYPE_DOUBLE,
        Arg::Text(_) => ColumnType::MYSQL_TYPE_VAR_STRING,
        Arg::Null => ColumnType::MYSQL_TYPE_NULL,
    }
}

pub fn put_arg(out: &mut Vec<u8>, a: &Arg) {
    match a {
        Arg::Int(v) => out.extend_from_slice(&v.to_le_bytes()),
        Arg::Real(v) => out.extend_from_slice(&v.to_le_bytes()),
        Arg::Text(s) => {
            put_lenenc(out, s.len() as u64);
            out.extend_from_slice(s.as_bytes());
        }
        Arg::Null => {}
    }
}

/// Appends one binary-protocol row's values: integers and floats as numbers, dates and
/// times undecoded, everything else (strings, decimals) as text, as the crate's values map.
pub fn decode_row(p: &[u8], cols: &[Col], out: &mut Vec<Val>) -> Result<()> {
    use ColumnType::*;
    let mut c = Cursor(p);
    c.u8()?;
    let nulls = c.take((cols.len() + 9) / 8)?;
    for (i, col) in cols.iter().enumerate() {
        let bit = i + 2;
        if nulls[bit / 8] & (1 << (bit % 8)) != 0 {
            out.push(Val::Null);
            continue;
        }
        let u = col.unsigned;
        out.push(match col.ty {
            MYSQL_TYPE_TINY if u => Val::Int(c.u8()? as i64),
            MYSQL_TYPE_TINY => Val::Int(c.u8()? as i8 as i64),
            MYSQL_TYPE_SHORT | MYSQL_TYPE_YEAR if u => Val::Int(u16::from_le_bytes(c.le()?) as i64),
            MYSQL_TYPE_SHORT | MYSQL_TYPE_YEAR => Val::Int(i16::from_le_bytes(c.le()?) as i64),
            MYSQL_TYPE_LONG | MYSQL_TYPE_INT24 if u => Val::Int(u32::from_le_bytes(c.le()?) as i64),
            MYSQL_TYPE_LONG | MYSQL_TYPE_INT24 => Val::Int(i32::from_le_bytes(c.le()?) as i64),
            MYSQL_TYPE_LONGLONG => Val::Int(i64::from_le_bytes(c.le()?)),
            MYSQL_TYPE_FLOAT => Val::Real(f32::from_le_bytes(c.le()?) as f64),
            MYSQL_TYPE_DOUBLE => Val::Real(f64::from_le_bytes(c.le()?)),
            MYSQL_TYPE_NULL => Val::Null,
            MYSQL_TYPE_DATE
            | MYSQL_TYPE_DATETIME
            | MYSQL_TYPE_TIMESTAMP
            | MYSQL_TYPE_TIME
            | MYSQL_TYPE_DATETIME2
            | MYSQL_TYPE_TIMESTAMP2
            | MYSQL_TYPE_TIME2 => {
                let n = c.u8()? as usize;
                c.take(n)?;
                Val::Other
            }
            _ => Val::text(c.lenenc_bytes()?.to_vec()),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ColumnType::*;

    #[test]
    fn length_encoded_integers_read_back_at_every_width() {
        for n in [0, 250, 251, 0xffff, 0x1_0000, 0xff_ffff, 0x100_0000, u64::MAX] {
            let mut out = Vec::new();
            put_lenenc(&mut out, n);
            let mut c = Cursor(&out);
            assert_eq!(c.lenenc().unwrap(), n);
            assert!(c.0.is_empty(), "{n} left bytes behind");
        }
        assert!(Cursor(&[0xfc, 1]).lenenc().is_err(), "a cut-off integer is an error, not a panic");
    }

    #[test]
    fn a_binary_row_decodes_by_column_type_with_nulls_from_the_bitmap() {
        let col = |ty, unsigned| Col { ty, unsigned };
        let cols = [
            col(MYSQL_TYPE_LONG, false),
            col(MYSQL_TYPE_TINY, true),
            col(MYSQL_TYPE_LONGLONG, false),
            col(MYSQL_TYPE_VAR_STRING, false),
            col(MYSQL_TYPE_DOUBLE, false),
            col(MYSQL_TYPE_DATETIME, false),
            col(MYSQL_TYPE_NEWDECIMAL, false),
            col(MYSQL_TYPE_LONG, false),
        ];
        // Header, then the null bitmap offset by 2 bits: column 7 (bit 9) is NULL.
        let mut row = vec![0x00, 0x00, 0b0000_0010];
        row.extend_from_slice(&(-5i32).to_le_bytes());
        row.push(200);
        row.extend_from_slice(&(1i64 << 40).to_le_bytes());
        row.extend_from_slice(&[3, b'a', b'b', b'c']);
        row.extend_from_slice(&2.5f64.to_le_bytes());
        row.extend_from_slice(&[4, 0xe8, 0x07, 11, 26]);
        row.extend_from_slice(&[4, b'1', b'.', b'2', b'5']);
        let mut vals = Vec::new();
        decode_row(&row, &cols, &mut vals).unwrap();
        let shown: Vec<String> = vals.iter().map(|v| format!("{v:?}")).collect();
        assert_eq!(
            shown,
            [
                "Int(-5)",
                "Int(200)",
                "Int(1099511627776)",
                "Text(\"abc\")",
                "Real(2.5)",
                "Other",
                "Text(\"1.25\")",
                "Null"
            ]
        );
        assert!(decode_row(&row[..row.len() - 2], &cols, &mut Vec::new()).is_err(), "a short row is an error");
    }

    #[test]
    fn ok_and_error_packets_give_counts_codes_and_messages() {
        assert_eq!(ok(&[0x00, 3, 0, 0x08, 0x00, 0, 0]).unwrap(), (3, 0x0008));
        let mut err = vec![0xff];
        err.extend_from_slice(&1213u16.to_le_bytes());
        err.extend_from_slice(b"#40001Deadlock found");
        match server_error(&err) {
            WireError::Server { code, state, message } => {
                assert_eq!((code, state.as_str(), message.as_str()), (1213, "40001", "Deadlock found"))
            }
            e => panic!("{e}"),
        }
        assert!(matches!(server_error(&[0xff]), WireError::Protocol(_)));
    }

    #[test]
    fn parameters_are_sent_as_the_types_they_are() {
        let mut out = Vec::new();
        for a in [Arg::Int(-2), Arg::Real(0.5), Arg::Text("xy"), Arg::Null] {
            put_arg(&mut out, &a);
        }
        let mut want = (-2i64).to_le_bytes().to_vec();
        want.extend_from_slice(&0.5f64.to_le_bytes());
        want.extend_from_slice(&[2, b'x', b'y']);
        assert_eq!(out, want);
        assert_eq!(arg_type(&Arg::Text("")) as u8, MYSQL_TYPE_VAR_STRING as u8);
    }
}
