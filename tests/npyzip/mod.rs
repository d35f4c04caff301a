//! `.npy` images and zip archives built in memory, for the tests of the `.npy` / `.npz`
//! readers (the library test `formats` and the command-line test `cli_vec`).

use std::io::{Cursor, Write};

use ndarray_npy::WriteNpyExt;
use zip::CompressionMethod;
use zip::write::SimpleFileOptions;

/// The `.npy` image of an array, as ndarray-npy writes it.
pub fn npy_bytes<A: ndarray_npy::WritableElement, D: ndarray::Dimension>(
    a: &ndarray::Array<A, D>,
) -> Vec<u8> {
    let mut v = Vec::new();
    a.write_npy(&mut v).unwrap();
    v
}

/// A version 1.0 `.npy` image with a header written by hand as NumPy does (dict, spaces, a
/// final newline, total header a multiple of 64 bytes), e.g. for the 0-d bytes array
/// `format` of a SciPy `.npz`, which ndarray-npy does not write.
pub fn npy_raw(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    let mut h = dict.into_bytes();
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(b' ');
    }
    h.push(b'\n');
    let mut v = b"\x93NUMPY\x01\x00".to_vec();
    v.extend((h.len() as u16).to_le_bytes());
    v.extend(h);
    v.extend_from_slice(data);
    v
}

/// A zip archive of `(name, bytes)` members, stored or deflated.
pub fn zip_of(members: &[(&str, Vec<u8>)], compressed: bool) -> Vec<u8> {
    let mut z = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let method = if compressed {
        CompressionMethod::Deflated
    } else {
        CompressionMethod::Stored
    };
    for (name, bytes) in members {
        z.start_file(
            *name,
            SimpleFileOptions::default().compression_method(method),
        )
        .unwrap();
        z.write_all(bytes).unwrap();
    }
    z.finish().unwrap().into_inner()
}
