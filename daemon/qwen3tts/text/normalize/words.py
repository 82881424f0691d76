"""How each language (other than English and Chinese) names units, prices, times and the decimal point.

Only words an announcer puts around numbers live here; the number words themselves come from
num2words. Templates take {h} and {m} (hours and minutes, as words), {w} and {c} (whole euros and
cents, as words).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Words:
    code: str
    """num2words language code."""
    point: str
    """The word for the decimal separator."""
    percent: str
    time: str | None
    """Template for hh:mm; None leaves times as written (Korean hours use native numbers)."""
    time_full_hour: str | None
    """Template for hh:00."""
    euros: str
    """Template for a price with cents."""
    euros_whole: str
    """Template for a whole price of more than one euro."""
    one_euro: str
    """Exactly one euro (grammar differs: ein Euro, un euro)."""
    units: dict[str, str] = field(default_factory=dict)
    decimal_comma: bool = True
    """12,5 is twelve point five and 1.250 one thousand two hundred and fifty."""
    joiner: str = " "
    """What goes between words ("" for Japanese)."""
    minute_zero: str = ""
    """Said before minutes 1-9 (Russian: четырнадцать ноль пять)."""
    scientific: str = "{m} E {e}"
    """Template for scientific notation, 1E-3: {m} the mantissa, {e} the exponent (with minus)."""
    minus: str = "minus"
    """The word for a minus sign."""


WORDS: dict[str, Words] = {
    "german": Words(
        code="de", point="Komma", percent="Prozent",
        time="{h} Uhr {m}", time_full_hour="{h} Uhr",
        euros="{w} Euro {c}", euros_whole="{w} Euro", one_euro="ein Euro",
        units={"km/h": "Kilometer pro Stunde", "km": "Kilometer", "kg": "Kilogramm", "°C": "Grad Celsius",
               "m": "Meter", "min": "Minuten", "h": "Stunden"},
        scientific="{m} mal zehn hoch {e}", minus="minus",
    ),
    "french": Words(
        code="fr", point="virgule", percent="pour cent",
        time="{h} heures {m}", time_full_hour="{h} heures",
        euros="{w} euros {c}", euros_whole="{w} euros", one_euro="un euro",
        units={"km/h": "kilomètres heure", "km": "kilomètres", "kg": "kilos", "°C": "degrés",
               "m": "mètres", "min": "minutes", "h": "heures"},
        scientific="{m} fois dix puissance {e}", minus="moins",
    ),
    "spanish": Words(
        code="es", point="coma", percent="por ciento",
        time="{h} y {m}", time_full_hour="{h} en punto",
        euros="{w} euros con {c}", euros_whole="{w} euros", one_euro="un euro",
        units={"km/h": "kilómetros por hora", "km": "kilómetros", "kg": "kilos", "°C": "grados",
               "m": "metros", "min": "minutos", "h": "horas"},
        scientific="{m} por diez elevado a {e}", minus="menos",
    ),
    "italian": Words(
        code="it", point="virgola", percent="per cento",
        time="{h} e {m}", time_full_hour="{h}",
        euros="{w} euro e {c}", euros_whole="{w} euro", one_euro="un euro",
        units={"km/h": "chilometri orari", "km": "chilometri", "kg": "chili", "°C": "gradi",
               "m": "metri", "min": "minuti", "h": "ore"},
        scientific="{m} per dieci alla {e}", minus="meno",
    ),
    "portuguese": Words(
        code="pt", point="vírgula", percent="por cento",
        time="{h} e {m}", time_full_hour="{h} horas",
        euros="{w} euros e {c}", euros_whole="{w} euros", one_euro="um euro",
        units={"km/h": "quilómetros por hora", "km": "quilómetros", "kg": "quilos", "°C": "graus",
               "m": "metros", "min": "minutos", "h": "horas"},
        scientific="{m} vezes dez elevado a {e}", minus="menos",
    ),
    "russian": Words(
        code="ru", point="запятая", percent="процентов",
        time="{h} {m}", time_full_hour="{h} ноль ноль", minute_zero="ноль",
        euros="{w} евро {c} центов", euros_whole="{w} евро", one_euro="один евро",
        units={"km/h": "километров в час", "km": "километров", "kg": "килограммов", "°C": "градусов",
               "m": "метров", "min": "минут", "h": "часов"},
        scientific="{m} умножить на десять в степени {e}", minus="минус",
    ),
    "japanese": Words(
        code="ja", point="点", percent="パーセント",
        time="{h}時{m}分", time_full_hour="{h}時",
        euros="{w}ユーロ{c}セント", euros_whole="{w}ユーロ", one_euro="一ユーロ",
        units={"km/h": "キロ毎時", "km": "キロ", "kg": "キロ", "°C": "度",
               "m": "メートル", "min": "分", "h": "時間"},
        decimal_comma=False, joiner="",
        scientific="{m}かける十の{e}乗", minus="マイナス",
    ),
    "korean": Words(
        code="ko", point="점", percent="퍼센트",
        time=None, time_full_hour=None,
        euros="{w}유로 {c}센트", euros_whole="{w}유로", one_euro="일 유로",
        units={"km/h": "킬로미터", "km": "킬로미터", "kg": "킬로그램", "°C": "도",
               "m": "미터", "min": "분", "h": "시간"},
        decimal_comma=False,
        scientific="{m} 곱하기 십의 {e}제곱", minus="마이너스",
    ),
}  # fmt: skip
