//! Pages of a stored blob (a test log, a raw trajectory), read with a seek: a 50 MB log opens
//! its first page without reading the rest. Page `k` starts at the first line start at or
//! after `k * PAGE_BYTES` (within `MAX_LINE_SEARCH` bytes; a longer line is cut there), so
//! every page is computed from its own offset alone and the pages tile the blob exactly.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde::Serialize;

/// The nominal size of one page.
pub const PAGE_BYTES: u64 = 256 * 1024;
/// How far past a page's nominal start its first line start is looked for.
const MAX_LINE_SEARCH: u64 = 64 * 1024;

/// One page of a blob.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Page {
    pub page: u64,
    pub pages: u64,
    /// Byte offsets of the page in the blob, and the blob's size.
    pub start: u64,
    pub end: u64,
    pub total: u64,
    /// The page's bytes as text (invalid UTF-8 replaced).
    pub text: String,
}

/// How many pages a blob of `total` bytes has (an empty blob has one, empty).
pub fn page_count(total: u64) -> u64 {
    total.div_ceil(PAGE_BYTES).max(1)
}

/// The offset page `k` starts at.
fn page_start(f: &mut fs_err::File, k: u64, total: u64) -> std::io::Result<u64> {
    if k == 0 {
        return Ok(0);
    }
    let nominal = (k * PAGE_BYTES).min(total);
    // The byte before the nominal start: a newline there means a line starts right at it.
    let from = nominal - 1;
    f.seek(SeekFrom::Start(from))?;
    let mut buf = vec![0u8; (MAX_LINE_SEARCH + 1).min(total - from) as usize];
    f.read_exact(&mut buf)?;
    Ok(match memchr::memchr(b'\n', &buf) {
        Some(i) => from + i as u64 + 1,
        None => nominal,
    })
}

/// Page `page` of the file at `path` (a blob); `None` past the last page.
pub fn read_page(path: &Path, page: u64) -> std::io::Result<Option<Page>> {
    let mut f = fs_err::File::open(path)?;
    let total = f.metadata()?.len();
    let pages = page_count(total);
    if page >= pages {
        return Ok(None);
    }
    let start = page_start(&mut f, page, total)?;
    let end = if page + 1 == pages {
        total
    } else {
        page_start(&mut f, page + 1, total)?
    };
    f.seek(SeekFrom::Start(start))?;
    let mut bytes = vec![0u8; (end - start) as usize];
    f.read_exact(&mut bytes)?;
    Ok(Some(Page {
        page,
        pages,
        start,
        end,
        total,
        text: String::from_utf8_lossy(&bytes).into_owned(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_tile_the_blob_on_line_starts() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log");
        let mut text = String::new();
        let mut i = 0;
        while text.len() < 3 * PAGE_BYTES as usize + 1000 {
            text.push_str(&format!("line {i} {}\n", "x".repeat(i % 97)));
            i += 1;
        }
        fs_err::write(&p, &text).unwrap();
        let mut joined = String::new();
        let mut k = 0;
        while let Some(page) = read_page(&p, k).unwrap() {
            assert_eq!(page.pages, 4);
            assert_eq!(page.start as usize, joined.len());
            if k > 0 {
                assert!(text[..page.start as usize].ends_with('\n'), "page {k}");
            }
            joined.push_str(&page.text);
            k += 1;
        }
        assert_eq!(k, 4);
        assert_eq!(joined, text);
    }

    #[test]
    fn a_line_longer_than_the_search_is_cut_and_nothing_is_lost() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log");
        let text = "y".repeat(2 * PAGE_BYTES as usize + 5);
        fs_err::write(&p, &text).unwrap();
        let a = read_page(&p, 0).unwrap().unwrap();
        let b = read_page(&p, 1).unwrap().unwrap();
        let c = read_page(&p, 2).unwrap().unwrap();
        assert_eq!(
            (a.end, b.start, b.end, c.start),
            (PAGE_BYTES, PAGE_BYTES, 2 * PAGE_BYTES, 2 * PAGE_BYTES)
        );
        assert_eq!(a.text.len() + b.text.len() + c.text.len(), text.len());
        assert!(read_page(&p, 3).unwrap().is_none());
        fs_err::write(&p, "").unwrap();
        let e = read_page(&p, 0).unwrap().unwrap();
        assert_eq!((e.pages, e.text.as_str()), (1, ""));
    }
}
