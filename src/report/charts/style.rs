//! How series look and are named: 12 colours × 4 markers (48 distinct pairs, and distinct line dashes past
//! the first 12), reference lines in a colour no series uses, and a legend drawn beside the plot, never over it.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::err;
use crate::error::Result;

/// Series colours: distinguishable, none of them the reference lines' red.
const COLORS: [RGBColor; 12] = [
    RGBColor(0x22, 0x22, 0x22),
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0x00, 0x3f, 0x88),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xb8, 0x86, 0x0b),
];

/// The colour an item kind is drawn in (the episode explorer's stacked bars): one of the series colours each.
#[must_use]
pub fn kind_hex(kind: crate::history::ItemKind) -> String {
    use crate::history::ItemKind;
    let c = COLORS[match kind {
        ItemKind::System => 10,
        ItemKind::User => 3,
        ItemKind::AssistantText => 1,
        ItemKind::ToolCall => 4,
        ItemKind::ToolResult => 2,
        ItemKind::Summary => 6,
        ItemKind::Reasoning => 7,
        ItemKind::Tools => 5,
        ItemKind::Unrecorded => 8,
    }];
    hex(c)
}

/// The colour of reference lines, as the explorer's CSS takes it.
#[must_use]
pub fn reference_hex() -> String {
    hex(REFERENCE)
}

fn hex(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// The colour of reference lines (the context window, a retention target): used by no series.
pub(super) const REFERENCE: RGBColor = RGBColor(0xd6, 0x27, 0x28);

/// Width of the legend panel beside a plot, in pixels.
pub(super) const LEGEND_WIDTH: u32 = 290;

/// The size of a chart's smallest text (axis labels, legends, point numbers), in plotters' units, which an SVG
/// writes at 0.806 of it: 12.1 px, which a report 900 px wide (868 px of page for a chart [`super::SIZE`] 900
/// px wide) shows at 11.7 px.
pub(super) const TEXT: u32 = 15;

/// A series' marker shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Marker {
    Circle,
    Triangle,
    Square,
    Cross,
}

/// Series `i`'s colour and marker: the colours first with circles, then with triangles, squares, crosses.
pub(super) fn style(i: usize) -> (RGBColor, Marker) {
    let marker = match (i / COLORS.len()) % 4 {
        0 => Marker::Circle,
        1 => Marker::Triangle,
        2 => Marker::Square,
        _ => Marker::Cross,
    };
    (COLORS[i % COLORS.len()], marker)
}

/// Series `i`'s line: solid for the first 12, dashed after (the dash length, in pixels).
pub(super) fn dash(i: usize) -> Option<u32> {
    (i >= COLORS.len()).then_some(if i / COLORS.len() % 2 == 1 { 6 } else { 2 })
}

/// Draws the marker of series `i` on `area` at pixel `at`.
pub(super) fn draw_marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    at: (i32, i32),
    i: usize,
    size: i32,
) -> Result<()> {
    let (c, m) = style(i);
    let s = size;
    match m {
        Marker::Circle => area.draw(&Circle::new(at, s, c.filled())),
        Marker::Triangle => area.draw(&TriangleMarker::new(at, s + 1, c.filled())),
        Marker::Square => area.draw(&Rectangle::new(
            [(at.0 - s, at.1 - s), (at.0 + s, at.1 + s)],
            c.filled(),
        )),
        Marker::Cross => area.draw(&Cross::new(at, s, c.stroke_width(2))),
    }
    .map_err(err("chart"))
}

/// One line of a legend: a series (its marker, and a line when `line`), or a reference line, or a note.
pub(super) enum Entry {
    /// Series `index`, named.
    Series {
        index: usize,
        name: String,
        line: bool,
    },
    /// A reference line in [`REFERENCE`], dashed when `dashed`.
    Reference { name: String, dashed: bool },
    /// Text alone.
    Note(String),
}

/// Draws `entries` top down in `area` (the panel beside the plot), shrinking the text when they are many.
pub(super) fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[Entry],
) -> Result<()> {
    let (_, height) = area.dim_in_pixel();
    let rows = i32::try_from(entries.len().max(1)).unwrap_or(i32::MAX);
    let text = i32::try_from(TEXT).unwrap_or(15);
    let step = ((i32::try_from(height).unwrap_or(540) - 60) / rows).clamp(text + 3, 24);
    let font_size = (step - 6).clamp(text, text + 1);
    let mut y = 48;
    for e in entries {
        let font = ("sans-serif", font_size).into_font().color(&BLACK);
        match e {
            Entry::Series { index, name, line } => {
                let (c, _) = style(*index);
                if *line {
                    // Dashed as the series' line is.
                    let step = dash(*index).map_or(24, |d| i32::try_from(d).unwrap_or(2) + 3);
                    let len = dash(*index).map_or(24, |d| i32::try_from(d).unwrap_or(2));
                    for x in (6..30).step_by(usize::try_from(step).unwrap_or(24)) {
                        area.draw(&PathElement::new(
                            [(x, y), ((x + len).min(30), y)],
                            c.stroke_width(2),
                        ))
                        .map_err(err("chart"))?;
                    }
                }
                draw_marker(area, (18, y), *index, 4)?;
                area.draw(&Text::new(name.clone(), (38, y - font_size / 2), font))
                    .map_err(err("chart"))?;
            }
            Entry::Reference { name, dashed } => {
                if *dashed {
                    for x in (6..30).step_by(8) {
                        area.draw(&PathElement::new(
                            [(x, y), (x + 4, y)],
                            REFERENCE.stroke_width(2),
                        ))
                        .map_err(err("chart"))?;
                    }
                } else {
                    area.draw(&PathElement::new(
                        [(6, y), (30, y)],
                        REFERENCE.stroke_width(2),
                    ))
                    .map_err(err("chart"))?;
                }
                area.draw(&Text::new(name.clone(), (38, y - font_size / 2), font))
                    .map_err(err("chart"))?;
            }
            Entry::Note(text) => {
                area.draw(&Text::new(text.clone(), (6, y - font_size / 2), font))
                    .map_err(err("chart"))?;
            }
        }
        y += step;
    }
    Ok(())
}

/// `v` with thousands separators, for axis labels: `1,234,567`.
pub(super) fn thousands(v: f64) -> String {
    if v.abs() >= 1000.0 {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let n = v.abs().round() as u64;
        let s = crate::report::table::thousands(n);
        if v < 0.0 {
            format!("-{s}")
        } else {
            s
        }
    } else if v.fract().abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forty_eight_series_look_different() {
        let mut seen = std::collections::HashSet::new();
        for i in 0..48 {
            let (c, m) = style(i);
            assert!(seen.insert((c.0, c.1, c.2, m as u8)), "series {i} repeats");
            assert_ne!((c.0, c.1, c.2), (REFERENCE.0, REFERENCE.1, REFERENCE.2));
        }
        assert_eq!(thousands(1_234_567.0), "1,234,567");
        assert_eq!(thousands(12.5), "12.50");
        assert_eq!(dash(3), None);
        assert!(dash(13).is_some());
    }
}
